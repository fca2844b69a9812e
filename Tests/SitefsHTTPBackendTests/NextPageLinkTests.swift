import Foundation
import SitefsProvider
import SitefsTestSupport
import Testing
@testable import SitefsHTTPBackend

/// The next page's cursor from a listing's `Link` header: read from what the server sends,
/// told before the page is decoded, and nothing (the page's own cursor) from anything else.
@Suite struct NextPageLinkTests {
    @Test func theNextLinksCursorIsRead() {
        #expect(NextPageLink.cursor(in: #"</v1/items/abc/children?limit=200&cursor=AKTq-n9_s>; rel="next""#) == "AKTq-n9_s")
        #expect(NextPageLink.cursor(in: #"</v1/sites?cursor=xyz&limit=1>;rel=next"#) == "xyz")
        #expect(NextPageLink.cursor(in: #"</a?cursor=first>; rel="prev", </b?cursor=second>; rel="last next""#) == "second")
        #expect(NextPageLink.cursor(in: #" </b?cursor=c2> ; REL = "Next""#) == "c2")
    }

    @Test func anythingElseGivesNoCursor() {
        for header in ["", "garbage", #"</a?cursor=x>; rel="prev""#, #"</a?limit=2>; rel="next""#,
                       #"</a?cursor=>; rel="next""#, #"</a?cursor=a%2Fb>; rel="next""#, #"</a?cursor=a b>; rel="next""#,
                       #"/a?cursor=x; rel="next""#, #"</a?cursor=x; rel="next""#,
                       "</a?cursor=\(String(repeating: "x", count: 5000))>; rel=\"next\"",
                       "</a?cursor=x>; rel=\"next\"" + String(repeating: " ", count: 9000)] {
            #expect(NextPageLink.cursor(in: header) == nil, "\(header.prefix(60))")
        }
    }

    /// Against a real `sitefs-server`: each page's early token is the page's own next.
    @Test func theServerNamesEachNextPageBeforeItIsDecoded() throws {
        let fixture = try LockBackendTests.Fixture()
        let anna = try fixture.backend("anna")
        for index in 0..<4 { _ = try anna.createFolder(named: "folder \(index)", in: fixture.site) }
        var token: PageToken?
        var told: [PageToken] = []
        var nexts: [PageToken] = []
        var names: [String] = []
        repeat {
            let page = try anna.children(of: fixture.site, after: token, limit: 2) { told.append($0) }
            names += page.items.map(\.name)
            if let next = page.next { nexts.append(next) }
            token = page.next
        } while token != nil
        #expect(Set(names) == Set(["plan.odt"] + (0..<4).map { "folder \($0)" }))
        #expect(nexts.count == 2)
        #expect(told == nexts)
    }
}
