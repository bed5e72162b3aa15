import LuaKit
import XCTest

/// The writer every wire format builds its lines with: members in the order added, strings
/// quoted as `LuaValue.json` quotes them, JSON written already inserted as it is.
final class JSONObjectWriterTests: XCTestCase {
    func testMembersKeepTheOrderTheyWereAddedIn() throws {
        var line = JSONObjectWriter()
        XCTAssertEqual(line.text, "{}")
        line.add("event", "state")
        line.add("t", 5)
        line.add("big", Int64.min)
        line.add("ok", false)
        try line.add("state", ["z": 1, "a": LuaValue([LuaValue(2.0), LuaValue("x")])], root: "state")
        line.add("files", ["b.lua", "a.lua"])
        line.add("differs", [3, 1])
        var inner = JSONObjectWriter()
        inner.add("z", 1)
        inner.add("a", 2)
        line.add("base", inner)
        line.add("changes", [inner, JSONObjectWriter()])
        // The object's own members stay as added; a Lua value's keys are sorted, as `json()` sorts them.
        XCTAssertEqual(
            line.text,
            #"{"event":"state","t":5,"big":-9223372036854775808,"ok":false,"state":{"a":[2.0,"x"],"z":1},"#
                + #""files":["b.lua","a.lua"],"differs":[3,1],"base":{"z":1,"a":2},"changes":[{"z":1,"a":2},{}]}"#)
        XCTAssertEqual(line.bytes, Array(line.text.utf8))
        XCTAssertEqual(try LuaValue(json: line.text)["base"]?["z"], 1)
    }

    func testKeysAndStringsAreQuotedAsLuaValuesAre() throws {
        let awkward = "say \"hi\"\\ \u{1B}[2J\n\ttab\u{7F} é \u{0}"
        var line = JSONObjectWriter()
        line.add(awkward, awkward)
        line.add("list", [awkward])
        let quoted = try LuaValue.string(LuaString(awkward)).json()
        XCTAssertEqual(quoted, #""say \"hi\"\\ \u001b[2J\n\ttab"# + "\u{7F} é " + #"\u0000""#)
        XCTAssertEqual(line.text, "{\(quoted):\(quoted),\"list\":[\(quoted)]}")
        XCTAssertEqual(try LuaValue(json: line.text)[awkward], LuaValue(awkward))
    }

    func testARawFragmentGoesInVerbatim() {
        var line = JSONObjectWriter()
        line.add("state", raw: #"{"zeta": 1, "alpha":[ 1.50 ]}"#)
        line.add("patch", raw: Array(#"[{"op":"replace","path":"/n","value":2}]"#.utf8))
        line.add("none", raw: "null")
        XCTAssertEqual(
            line.text,
            #"{"state":{"zeta": 1, "alpha":[ 1.50 ]},"patch":[{"op":"replace","path":"/n","value":2}],"none":null}"#)
    }

    func testAValueThatIsNotJSONLeavesTheObjectAsItWas() {
        var line = JSONObjectWriter()
        line.add("t", 1)
        XCTAssertThrowsError(
            try line.add("state", ["items": LuaValue([LuaValue(1), LuaValue(Double.nan)])], root: "state")
        ) { error in
            XCTAssertTrue("\(error)".contains("state.items[2]"), "\(error)")
        }
        line.add("ok", true)
        XCTAssertEqual(line.text, #"{"t":1,"ok":true}"#)
        line.add("cause", .number(.infinity), root: "cause", otherwise: "{}")
        XCTAssertEqual(line.text, #"{"t":1,"ok":true,"cause":{}}"#)
    }
}
