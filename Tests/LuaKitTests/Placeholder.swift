import XCTest
final class LuaKitTestsPlaceholder: XCTestCase { func testNothing() {} }
