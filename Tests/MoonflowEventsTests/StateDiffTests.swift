import LuaKit
import MoonflowEvents
import XCTest

/// The diff by path the test store prints, `replay` reports and the inspector shows beside a rerun step.
final class StateDiffTests: XCTestCase {
    func testTheDiffRendersNestedPathsAndMissingKeys() {
        let lines = StateDiff.lines(
            expected: ["items": [["title": "a"], ["title": "b"]], "same": 1],
            actual: ["items": [["title": "a"], ["title": "c"], ["title": "d"]], "same": 1])
        XCTAssertEqual(
            lines,
            [
                #"- items[2].title = "b""#, #"+ items[2].title = "c""#,
                "- items[3] = nil", #"+ items[3] = { title = "d" }"#,
            ])
        XCTAssertTrue(StateDiff.same(["n": 1], ["n": .number(1.0)]), "1 == 1.0 as in Lua")
        XCTAssertTrue(
            StateDiff.same(.table(LuaTable(isJSONArray: true)), .table(LuaTable())),
            "an empty list equals an empty table")
    }
}
