import LuaKit
import XCTest

/// JSON read straight into Lua (`LuaState.withJSON`) gives the value `LuaValue(jsonBytes:)`
/// gives once pushed, and the same errors; tests tell the C pass from the Swift reader.
final class JSONIntoLuaTests: XCTestCase {
    /// The value read straight (copied out to compare), its JSON written back from the
    /// table, and whether the C pass read it.
    private func straight(_ lua: LuaState, _ text: String) throws -> (LuaValue, String, inC: Bool) {
        let bytes = Array(text.utf8)
        let inC = bytes.withUnsafeBytes { lua.readsJSONInC($0) }
        let ref = try bytes.withUnsafeBytes { try lua.withJSON($0) { try $0.ref(1) } }
        let json = String(decoding: try lua.jsonBytes(of: ref), as: UTF8.self)
        return (try lua.value(of: ref), json, inC)
    }

    /// The value through the Swift reader, pushed into Lua and written back the same way.
    private func throughSwift(_ lua: LuaState, _ text: String) throws -> (LuaValue, String) {
        let ref = try lua.ref(.value(try LuaValue(json: text)))
        return (try lua.value(of: ref), String(decoding: try lua.jsonBytes(of: ref), as: UTF8.self))
    }

    func testEveryKindOfDocumentReadsAsTheSwiftReaderReadsIt() throws {
        let lua = try LuaState()
        let documents = [
            #"{"type":"add","n":1,"note":"hi"}"#,
            #"{"int":9007199254740993,"max":9223372036854775807,"min":-9223372036854775808}"#,
            #"{"over":9223372036854775808,"under":-9223372036854775809,"negzero":-0,"zero":0}"#,
            #"{"f":0.1,"e":1e300,"tiny":5e-324,"neg":-0.0,"whole":2.0,"E":1E2,"plus":1e+2,"minus":25e-1}"#,
            #"[1,2,3,[4,[5,[6]]]]"#,
            #"[null,2,null,4]"#, #"[null]"#, #"[]"#, #"{}"#, #"[[],{},[[]]]"#,
            #"{"a":null,"b":1}"#, #"{"a":1,"a":2}"#, #"{"a":1,"a":null}"#,
            #"{"s":"quote \" backslash \\ slash \/ \b\f\n\r\t \u0001 \u00e9 \u20AC \ud83d\ude00 end"}"#,
            "{\"raw\":\"caf\u{e9} \u{1F600}\"}",
            #"{"nul":"a\u0000b"}"#,
            "  \n\t{ \"spaced\" : [ 1 , 2 ] }  \r\n",
            "\u{FEFF}{\"bom\":true}",
            #"{"t":true,"f":false}"#, #""just a string""#, "42", "-7.5", "true", "null",
            #"{"1":"string key one","2":"two"}"#,
        ]
        for text in documents {
            let (value, json, inC) = try straight(lua, text)
            let (expected, expectedJSON) = try throughSwift(lua, text)
            XCTAssertTrue(inC, "the C pass reads \(text)")
            XCTAssertEqual(value, expected, text)
            XCTAssertEqual(json, expectedJSON, "written back: \(text)")
        }
    }

    func testAnArrayWithNoElementStaysAnArray() throws {
        let lua = try LuaState()
        XCTAssertEqual(try straight(lua, #"{"a":[],"b":[null],"c":{}}"#).1, #"{"a":[],"b":[],"c":{}}"#)
        XCTAssertEqual(try straight(lua, "[]").0, LuaValue.table(LuaTable(isJSONArray: true)))
    }

    func testInvalidUTF8InStringsIsKeptAsBytes() throws {
        let lua = try LuaState()
        let bytes: [UInt8] = Array(#"{"s":""#.utf8) + [0xFF, 0xC0, 0x41] + Array(#""}"#.utf8)
        XCTAssertTrue(bytes.withUnsafeBytes { lua.readsJSONInC($0) })
        let value = try bytes.withUnsafeBytes { try lua.withJSON($0) { try $0.value(1) } }
        XCTAssertEqual(value["s"], .string(LuaString(bytes: [0xFF, 0xC0, 0x41])))
        XCTAssertEqual(value, try LuaValue(jsonBytes: bytes))
    }

    /// Every mistake is left to the Swift reader, so the error is its error, line and column.
    func testMistakesGiveTheSwiftReadersErrors() throws {
        let lua = try LuaState()
        let mistakes = [
            #"{"a": 1 "b": 2}"#, "{\n  \"a\": [1,\n    2,,\n]}", "", "1 2", "[1,]", #"{"a":1,}"#, "{1:2}",
            #"{"a" 1}"#, "[1 2]", "01", "1.", "1e+", "-x", "tru", "[nul]", #""abc"#, "\"a\nb\"", #""\x""#,
            #""\u12G4""#, #""\ud83d""#, #""\ude00""#, #""\ud83d\u0041""#, "1e400", "-1e400", "[1", #"{"a":"#,
        ]
        for text in mistakes {
            let bytes = Array(text.utf8)
            XCTAssertFalse(bytes.withUnsafeBytes { lua.readsJSONInC($0) }, text)
            var expected: JSONError?
            XCTAssertThrowsError(try LuaValue(json: text)) { expected = $0 as? JSONError }
            XCTAssertThrowsError(try bytes.withUnsafeBytes { try lua.withJSON($0) { _ in () } }, text) { error in
                guard let error = error as? JSONError, let expected else { return XCTFail("\(text): \(error)") }
                XCTAssertEqual(error.description, expected.description, text)
            }
        }
    }

    func testNestingUpToTheLimitIsReadInCAndDeeperIsRefused() throws {
        let lua = try LuaState()
        let ok = String(repeating: "[", count: LuaState.maxDepth) + String(repeating: "]", count: LuaState.maxDepth)
        let (_, json, inC) = try straight(lua, ok)
        XCTAssertTrue(inC)
        XCTAssertEqual(json, ok)
        for opener in ["[", #"{"a":"#] {
            let hostile = String(repeating: opener, count: 10_000)
            XCTAssertThrowsError(try Array(hostile.utf8).withUnsafeBytes { try lua.withJSON($0) { _ in () } }) {
                error in
                XCTAssertTrue("\(error)".contains("at most 200 levels"), "\(error)")
            }
        }
    }

    func testTheStackIsAsItWasAfterEveryRead() throws {
        let lua = try LuaState()
        let probe = try lua.load(string: "return select('#', ...)", name: "probe")
        for text in [#"{"a":[1,2,{"b":"c\n"}]}"#, "[1,", #""\ud800""#] {
            _ = try? Array(text.utf8).withUnsafeBytes { try lua.withJSON($0) { _ in () } }
            // A call with no arguments sees none: nothing was left behind on the stack.
            XCTAssertEqual(try lua.call(probe, []), [0], text)
        }
    }

    func testAMemoryLimitStopsAHugeDocumentCleanly() throws {
        let lua = try LuaState(memoryLimit: 4 << 20)
        let huge =
            "["
            + Array(repeating: #"{"id":1,"name":"a fairly long string to take room"}"#, count: 200_000).joined(
                separator: ",") + "]"
        XCTAssertThrowsError(try Array(huge.utf8).withUnsafeBytes { try lua.withJSON($0) { _ in () } }) { error in
            guard case LuaError.memory = error else { return XCTFail("\(error)") }
        }
        // The state still works.
        XCTAssertEqual(try lua.run(string: "return 1 + 1", name: "after"), [2])
    }
}
