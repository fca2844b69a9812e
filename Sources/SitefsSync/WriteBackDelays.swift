import SitefsAPI

/// How long a change waits before it is sent. Only a change that may be the first step of
/// an editor's save sequence waits, so the rest of the sequence can fold it into one new
/// version of the document (SyncEngine+EditorSaves.swift); everything else goes at once.
///
/// The steps that wait, and why their waits differ:
/// - a new file (`newFile`): it may be the temp file an editor renames over the document it
///   saves (sed -i, LibreOffice, gedit), or vim's new file whose backup it deletes next.
///   Either step follows the close within milliseconds, so the wait is short; a rename over
///   a document that comes later still keeps the document's identity (the server's rename
///   with `replaceExisting`), it only is not conditional on the version the editor read.
/// - a new file named as those editors name their temp files (`isEditorTempName`) waits as
///   long as a backup rename: on a busy machine LibreOffice takes more than the short wait
///   between closing its empty temp file and renaming it over the document, and the temp
///   file is nothing anyone wants on the server. The rename ends the wait.
/// - a document renamed to a backup name (`backupRename`: `NAME~`, as vim and Emacs make):
///   the new `NAME` is written next, which takes as long as writing the document does.
///
/// - a save made while the file stays open (`newFile`, the same short wait): a program's
///   close(2) of one descriptor while another still has the file open (a shell's `> file`
///   closes the one it opened, still empty, before the command writes) is not its last word.
///   The last close ends the wait (`Uploader.fileClosed`).
///
/// A save of a server file at its last close, the new version an editor's sequence came to,
/// a plain rename and a delete are never a first step: they go at once.
public struct WriteBackDelays: Sendable, Equatable {
    public var newFile: Duration
    public var backupRename: Duration
    /// What every other change waits (zero, but for tests that hold all work still).
    public var otherChanges: Duration

    /// The mount's policy: `editorSequence` for a rename to a backup name (`--write-back-delay`),
    /// `newFile` for new files, capped at `editorSequence`.
    public static func editorAware(editorSequence: Duration, newFile: Duration) -> WriteBackDelays {
        WriteBackDelays(newFile: min(newFile, editorSequence), backupRename: editorSequence, otherChanges: .zero)
    }

    /// Every change waits `delay` (a test that wants work held, or sent, whatever it is).
    public static func uniform(_ delay: Duration) -> WriteBackDelays {
        WriteBackDelays(newFile: delay, backupRename: delay, otherChanges: delay)
    }

    /// What a save waits: a new file's create its short wait (named as an editor's temp file:
    /// the backup wait), as does a save of a file still open (`openAfter`); a server file's
    /// save at its last close none.
    func save(createsFile: Bool, openAfter: Bool, name: String) -> Duration {
        if createsFile, Self.isEditorTempName(name) { return max(backupRename, newFile, otherChanges) }
        return createsFile || openAfter ? max(newFile, otherChanges) : otherChanges
    }

    /// What a rename of a server file to `name` waits.
    func rename(to name: String) -> Duration {
        Self.isBackupName(name) ? backupRename : otherChanges
    }

    /// `NAME~` and Emacs's numbered `NAME.~N~`: the names editors move a document to before
    /// writing its new content under the old name.
    public static func isBackupName(_ name: String) -> Bool { name.count > 1 && name.hasSuffix("~") }

    /// The names editors give the temp file they write a document into before renaming it
    /// over the document: LibreOffice's `lu` + letters and digits + `.tmp`, GNU sed's
    /// `sed` + six (mkstemp's `sedXXXXXX`), GLib's (gedit) `.goutputstream-` + six. Compared
    /// as bytes, ASCII letters and digits only.
    public static func isEditorTempName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        func alphanumeric(_ part: ArraySlice<UInt8>) -> Bool {
            part.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
        }
        func matches(prefix: String, middle: ClosedRange<Int>, suffix: String) -> Bool {
            let head = Array(prefix.utf8), tail = Array(suffix.utf8)
            guard bytes.count >= head.count + tail.count, bytes.starts(with: head), bytes.suffix(tail.count).elementsEqual(tail) else {
                return false
            }
            let part = bytes[head.count..<(bytes.count - tail.count)]
            return middle.contains(part.count) && alphanumeric(part)
        }
        return matches(prefix: "lu", middle: 1...32, suffix: ".tmp") || matches(prefix: "sed", middle: 6...6, suffix: "")
            || matches(prefix: ".goutputstream-", middle: 6...6, suffix: "")
    }
}
