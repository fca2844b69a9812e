import SitefsWebDAV
import Testing

/// getlastmodified in the three forms RFC 9110 has a recipient accept, and nothing else.
@Suite struct HTTPDateTests {
    @Test func theThreeFormsOfOneInstantAgree() {
        // 784111777 is 1994-11-06T08:49:37Z, RFC 9110's own example.
        #expect(HTTPDate.secondsSinceEpoch("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.secondsSinceEpoch("Sunday, 06-Nov-94 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.secondsSinceEpoch("Sun Nov  6 08:49:37 1994") == 784_111_777)
    }

    @Test func datesAcrossTheCalendar() {
        #expect(HTTPDate.secondsSinceEpoch("Thu, 01 Jan 1970 00:00:00 GMT") == 0)
        #expect(HTTPDate.secondsSinceEpoch("Tue, 29 Feb 2000 12:00:00 GMT") == 951_825_600)
        #expect(HTTPDate.secondsSinceEpoch("Wed, 25 Nov 2026 14:00:00 GMT") == 1_795_615_200)
        #expect(HTTPDate.secondsSinceEpoch("  Tue, 24 Nov 2026 09:16:40 GMT\n") == 1_795_511_800)
        #expect(HTTPDate.secondsSinceEpoch("Thursday, 01-Jan-70 00:00:00 GMT") == 0)
        #expect(HTTPDate.secondsSinceEpoch("Friday, 01-Jan-27 00:00:00 GMT") == 1_798_761_600)
    }

    @Test func formattingGivesTheIMFFixdateAndReadsBack() {
        #expect(HTTPDate.format(secondsSinceEpoch: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(secondsSinceEpoch: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(secondsSinceEpoch: 951_825_600) == "Tue, 29 Feb 2000 12:00:00 GMT")
        for seconds: Int64 in stride(from: 0, to: 4_000_000_000, by: 37_654_321) {
            #expect(HTTPDate.format(secondsSinceEpoch: seconds).flatMap(HTTPDate.secondsSinceEpoch) == seconds)
        }
        #expect(HTTPDate.format(secondsSinceEpoch: -1) == nil)
        #expect(HTTPDate.format(secondsSinceEpoch: .max) == nil)
    }

    @Test(arguments: [
        "", "yesterday", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT",
        "Sun, 31 Feb 1994 08:49:37 GMT", "Sun, 29 Feb 1900 08:49:37 GMT", "Sun, 06 Now 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:00 GMT", "Sun, 06 Nov 1994 8:49:37 GMT",
        "Sun, 06 Nov 1994 08:49 GMT", "Sun, 06 Nov 0001 08:49:37 GMT", "Sun, 06 Nov +994 08:49:37 GMT",
        "Sun, 99999999999999999999 Nov 1994 08:49:37 GMT", "Sun Nov 36 08:49:37 1994", "1994-11-06T08:49:37Z",
    ])
    func anythingElseIsNil(text: String) {
        #expect(HTTPDate.secondsSinceEpoch(text) == nil)
    }
}
