import XCTest
final class MoonflowLuaTestsPlaceholder: XCTestCase { func testNothing() {} }
