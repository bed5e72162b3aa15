@testable import LuaKit
import XCTest

/// `trimmingWhitespace()`, what input lines, tracebacks and a dev server's replies are
/// trimmed with, takes off what Foundation's `.whitespacesAndNewlines` did.
final class TrimmingTests: XCTestCase {
    func testTakesSpacesTabsAndLineEndsOffBothEnds() {
        XCTAssertEqual(" \t{\"type\":\"inc\"}\r\n".trimmingWhitespace(), #"{"type":"inc"}"#)
        // no-break, em space, line separator
        XCTAssertEqual("\u{00A0}\u{2003}word\u{2028}".trimmingWhitespace(), "word")
        XCTAssertEqual(Substring("  a b  ").trimmingWhitespace(), "a b")  // inner space stays
    }

    func testLeavesOtherTextAlone() {
        XCTAssertEqual("".trimmingWhitespace(), "")
        XCTAssertEqual(" \n\t ".trimmingWhitespace(), "")
        XCTAssertEqual("\u{FEFF}x".trimmingWhitespace(), "\u{FEFF}x")  // a byte order mark is not white space
        XCTAssertEqual("é".trimmingWhitespace(), "é")
    }
}
