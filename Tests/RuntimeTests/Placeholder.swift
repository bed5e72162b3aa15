import XCTest
final class RuntimeTestsPlaceholder: XCTestCase { func testNothing() {} }
