import Foundation
import SitefsProvider
import Synchronization
import SystemPackage
import Testing
@testable import SitefsCore

/// The listing's page chain: the next pages' requests go out before the page that named them
/// is stored, up to the depth ahead of the reader, and an answer nobody takes is let go.
@Suite struct PageReadAheadTests {
    /// Page numbers, in the order noted.
    final class Numbers: Sendable {
        private let numbers = Mutex<[Int]>([])
        func note(_ number: Int) { numbers.withLock { $0.append(number) } }
        var all: [Int] { numbers.withLock { $0 } }
    }

    /// A server answer of page `number` of `count`, noting in `released` when let go.
    final class Answer: Sendable {
        let number: Int
        let count: Int
        let released: Numbers?

        init(_ number: Int, of count: Int, released: Numbers? = nil) {
            self.number = number
            self.count = count
            self.released = released
        }

        var next: PageToken? { number < count ? PageToken(String(number + 1)) : nil }

        deinit { released?.note(number) }
    }

    private static func number(_ token: PageToken?) -> Int { token.flatMap { Int($0.rawValue) } ?? 1 }

    private static func page(_ answer: Answer) -> FetchedPage {
        (["f\(answer.number)"], [ItemIdentifier(site: "s", id: String(answer.number))], answer.next)
    }

    /// Every name of the listing, page by page as a reader takes them: from the first page,
    /// or on from `first` when the reader has it already.
    private static func names(readingAll pages: PageReadAhead<Answer>, after first: FetchedPage? = nil) throws -> [String] {
        var page = try first ?? pages.page(after: nil)
        var names = page.names
        while let next = page.next {
            page = try pages.page(after: next)
            names += page.names
        }
        return names
    }

    @Test func theNextPageIsRequestedBeforeThisOneIsStored() throws {
        let nextRequested = DispatchSemaphore(value: 0)
        let storedBeforeNextRequest = Numbers()
        let pages = PageReadAhead<Answer>(
            request: { token, _ in
                if token != nil { nextRequested.signal() }
                return Answer(Self.number(token), of: 3)
            },
            store: { answer in
                // Storing page n waits until the request of page n+1 is on its way; were
                // the two one after the other, it would wait in vain.
                if answer.next != nil, nextRequested.wait(timeout: .now() + 10) == .timedOut {
                    storedBeforeNextRequest.note(answer.number)
                }
                return Self.page(answer)
            },
            nextToken: { $0.next })
        let names = try Self.names(readingAll: pages)
        #expect(names == ["f1", "f2", "f3"])
        #expect(storedBeforeNextRequest.all.isEmpty, "stored before the next request started")
    }

    @Test func pagesAreRequestedAheadOfAReaderThatHasNotComeToThem() throws {
        let thirdRequested = DispatchSemaphore(value: 0)
        let pages = PageReadAhead<Answer>(
            request: { token, _ in
                if Self.number(token) == 3 { thirdRequested.signal() }
                return Answer(Self.number(token), of: 4)
            },
            store: { Self.page($0) },
            nextToken: { $0.next })
        let first = try pages.page(after: nil)
        // The reader has not asked for page 2: page 3 is requested all the same.
        #expect(thirdRequested.wait(timeout: .now() + 10) == .success, "page 3 waited for the reader to take page 2")
        let names = try Self.names(readingAll: pages, after: first)
        #expect(names == ["f1", "f2", "f3", "f4"])
    }

    @Test func aPageNamedEarlyIsRequestedWhileThePageBeforeItIsDecoded() throws {
        // requested[n]: page n's request has started (pages 2 and 3 of 3).
        let requested = [2: DispatchSemaphore(value: 0), 3: DispatchSemaphore(value: 0)]
        let decodedAfterNextRequest = Numbers()
        let pages = PageReadAhead<Answer>(
            request: { token, nextKnown in
                let number = Self.number(token)
                requested[number]?.signal()
                let answer = Answer(number, of: 3)
                guard let next = answer.next else { return answer }
                nextKnown(next)
                // "Decoding" page n waits until page n+1 is on its way: without the early
                // request, they would be one after the other and it would wait in vain.
                // Page 1 is the reader's own request, page 2 the thread's ahead of it.
                if requested[number + 1]?.wait(timeout: .now() + 10) == .success { decodedAfterNextRequest.note(number) }
                return answer
            },
            store: { Self.page($0) },
            nextToken: { $0.next })
        let names = try Self.names(readingAll: pages)
        #expect(names == ["f1", "f2", "f3"])
        #expect(decodedAfterNextRequest.all.sorted() == [1, 2], "a page waited for the answer before it")
    }

    @Test func anEarlyTokenThePageDoesNotKeepCostsOneRequestOnly() throws {
        let requested = Numbers()
        let pages = PageReadAhead<Answer>(
            request: { token, nextKnown in
                let number = Self.number(token)
                requested.note(number)
                // Page 1 names page 7 early, then says page 2 comes next.
                if number == 1 { nextKnown(PageToken("7")) }
                return Answer(number, of: number == 7 ? 7 : 3)
            },
            store: { Self.page($0) },
            nextToken: { $0.next })
        let names = try Self.names(readingAll: pages)
        #expect(names == ["f1", "f2", "f3"])
        #expect(requested.all.filter { $0 == 7 }.count <= 1)
        #expect(requested.all.filter { $0 == 2 }.count == 1)
    }

    @Test func aReaderThatStopsCostsAtMostTheDepthAndItsAnswersAreLetGo() throws {
        let released = Numbers()
        let requested = Numbers()
        var pages: PageReadAhead<Answer>? = PageReadAhead<Answer>(
            request: { token, _ in
                requested.note(Self.number(token))
                return Answer(Self.number(token), of: 9, released: released)
            },
            store: { Self.page($0) },
            nextToken: { $0.next })
        let first = try #require(pages).page(after: nil)  // like `ls | head`: one page, then close
        #expect(first.names == ["f1"])
        pages = nil
        // The thread requesting ahead holds the chain until it stops at the depth; then what
        // it requested for nobody is let go.
        let expected = Array(1...(1 + PageReadAhead<Answer>.depth))
        let deadline = Date.now.addingTimeInterval(10)
        while released.all.sorted() != expected, Date.now < deadline { usleep(1000) }
        #expect(released.all.sorted() == expected)
        #expect(requested.all == expected)
    }

    @Test func aFailedRequestAheadIsMadeAgainByTheReader() throws {
        let attempts = Numbers()
        let pages = PageReadAhead<Answer>(
            request: { (token: PageToken?, _) throws(Errno) -> Answer in
                let number = Self.number(token)
                attempts.note(number)
                if number == 2, attempts.all.filter({ $0 == 2 }).count == 1 { throw .ioError }
                return Answer(number, of: 2)
            },
            store: { Self.page($0) },
            nextToken: { $0.next })
        let first = try pages.page(after: nil)
        let second = try pages.page(after: first.next)
        #expect(second.names == ["f2"])
        #expect(attempts.all == [1, 2, 2])
    }
}
