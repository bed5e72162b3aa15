import XCTest
final class StreamsTestsPlaceholder: XCTestCase { func testNothing() {} }
