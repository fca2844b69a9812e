# Sourced by the scripts: finds the Swift toolchain when it is installed but not on PATH.
if ! command -v swift >/dev/null 2>&1; then
    for candidate in /opt/swift/usr/bin /usr/share/swift/usr/bin; do
        if [ -x "$candidate/swift" ]; then PATH="$candidate:$PATH"; export PATH; break; fi
    done
fi
command -v swift >/dev/null 2>&1 || { echo "Swift 6 is required: https://www.swift.org/install/linux/" >&2; exit 1; }
