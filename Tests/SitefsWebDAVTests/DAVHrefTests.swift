import SitefsWebDAV
import Testing

/// Hrefs are followed only below the mount's base, on its origin, with names that decode.
@Suite struct DAVHrefTests {
    let base = "/remote.php/dav/files/anna/"
    let origin = "https://files.example.com"

    private func components(_ href: String) -> [String]? {
        DAVHref.components(of: href, below: base, origin: origin)
    }

    @Test func pathsBelowTheBaseDecodeToNames() {
        #expect(components("/remote.php/dav/files/anna/") == [])
        #expect(components("/remote.php/dav/files/anna") == [])
        #expect(components("/remote.php/dav/files/anna/Harbour%20Tower/") == ["Harbour Tower"])
        #expect(components("/remote.php/dav/files/anna/Harbour%20Tower/plan%C3%A9.odt") == ["Harbour Tower", "plané.odt"])
        #expect(components("/remote.php/dav/files/anna/a+b%25.txt") == ["a+b%.txt"])
    }

    @Test func aFullURLCountsOnlyOnTheSameOrigin() {
        #expect(components("https://files.example.com/remote.php/dav/files/anna/doc.odt") == ["doc.odt"])
        #expect(components("HTTPS://Files.Example.com/remote.php/dav/files/anna/doc.odt") == ["doc.odt"])
        #expect(components("https://evil.example.net/remote.php/dav/files/anna/doc.odt") == nil)
        #expect(components("http://files.example.com/remote.php/dav/files/anna/doc.odt") == nil)
        #expect(components("ftp://files.example.com/remote.php/dav/files/anna/doc.odt") == nil)
    }

    @Test func anythingOutsideTheBaseIsRefused() {
        #expect(components("/remote.php/dav/files/bob/secret.odt") == nil)
        #expect(components("/remote.php/dav/files/") == nil)
        #expect(components("/remote.php/dav/files/anna/../bob/x") == nil)
        #expect(components("/remote.php/dav/files/anna/%2E%2E/bob/x") == nil)
        #expect(components("relative/doc.odt") == nil)
    }

    @Test(arguments: ["a%2Fb", "a%00b", "%FF%FE", "bad%zz", "trail%2", ".", "x//y", "doc.odt?v=2", "doc.odt#top"])
    func aNameThatCannotBeAFileNameIsRefused(segment: String) {
        #expect(components(base + segment) == nil)
        // Also below a listed collection whose path the href repeats byte for byte.
        #expect(listed(base + "Harbour%20Tower/" + segment) == nil)
    }

    /// A listing of the collection "Harbour Tower" (its request path as sitefs encodes it).
    private func listed(_ href: String) -> [String]? {
        DAVHref.Base(path: base, origin: origin)?.components(of: href, below: ["Harbour Tower"],
                                                                 encoded: Array((base + "Harbour%20Tower/").utf8))
    }

    /// Hrefs of a listing read the same whether the server repeats the request's encoding of
    /// the collection (only the rest is decoded) or writes it otherwise.
    @Test func aListingsHrefsReadTheSameHoweverTheCollectionIsEncoded() {
        #expect(listed(base + "Harbour%20Tower/") == ["Harbour Tower"])
        #expect(listed(base + "Harbour%20Tower/plan%C3%A9.odt") == ["Harbour Tower", "plané.odt"])
        #expect(listed("https://files.example.com" + base + "Harbour%20Tower/a%20b") == ["Harbour Tower", "a b"])
        #expect(listed(base + "Harbour Tower/plan.odt") == ["Harbour Tower", "plan.odt"])
        #expect(listed(base + "Harbour%20tower/plan.odt") == ["Harbour tower", "plan.odt"])
        #expect(listed(base + "Other/plan.odt") == ["Other", "plan.odt"])
        #expect(listed("/remote.php/dav/files/bob/Harbour%20Tower/plan.odt") == nil)
        #expect(listed("https://evil.example.net" + base + "Harbour%20Tower/plan.odt") == nil)
    }

    @Test func namesAreComparedAsBytesNotAsCanonicalText() {
        // "é" composed in the base, decomposed in the href: another path, not the same one.
        let composed = DAVHref.components(of: "/caf%C3%A9/x", below: "/caf%C3%A9/", origin: origin)
        let decomposed = DAVHref.components(of: "/cafe%CC%81/x", below: "/caf%C3%A9/", origin: origin)
        #expect(composed == ["x"] && decomposed == nil)
    }
}
