import LuaKit
import XCTest

/// JSON written straight from a Lua table (`LuaState.jsonBytes(of:)`) is the text the
/// same table gives when copied into a `LuaValue` first, errors included.
final class TableJSONTests: XCTestCase {
    /// The text written straight, the text of the copy, and whether the C walk wrote it.
    private func both(_ chunk: String) throws -> (String, String, inC: Bool) {
        let lua = try LuaState()
        let ref = try lua.call(try lua.load(string: chunk, name: "t"), []) { try $0.ref(1) }
        let straight = String(decoding: try lua.jsonBytes(of: ref, root: "state"), as: UTF8.self)
        let copied = try lua.value(of: ref, path: "state").json(sortedKeys: true, root: "state")
        let inC = lua.jsonBytesInC(of: ref).map { String(decoding: $0, as: UTF8.self) }
        if let inC { XCTAssertEqual(inC, straight, chunk) }
        return (straight, copied, inC != nil)
    }

    func testInvalidUTF8IsLeftToTheCopyWhichRepairsIt() throws {
        let (straight, copied, inC) = try both(
            "return { bad = 'caf\\xe9 \\xff\\xfe ok', surrogate = '\\xed\\xa0\\x80', overlong = '\\xc0\\xaf' }")
        XCTAssertFalse(inC)
        XCTAssertEqual(straight, copied)
        XCTAssertTrue(straight.contains("\u{FFFD}"), straight)
    }

    func testEveryKindOfValueWritesAsTheCopyDoes() throws {
        let chunks = [
            "return { n = 1, f = 0.1, big = math.maxinteger, small = math.mininteger, exact = 9007199254740993 }",
            "return { 1, 2, 3, { a = { b = { 'deep' } } } }",
            "return { 1, 2, nil, 4 }",  // a hole: an object with keys 1, 2, 4
            "return { 1, 2, x = 'mixed', [10] = true }",
            "return { [1.5] = 'float key', [-3] = 'negative', [0] = 'zero', b = false }",
            "return { s = 'quote \" backslash \\\\ tab \\t nl \\n ctl \\1 nul \\0 end' }",
            "return { bad = 'caf\\xe9 \\xff\\xfe ok', good = 'caf\\u{e9} \\u{1F600}' }",
            "return { e1 = 1e300, e2 = 1e-7, neg = -0.0, half = 2.5, whole = 2.0, mid = 123456789.125 }",
            "return {}",
            "return { {}, { {} } }",
            "return { zz = 1, a = 2, [''] = 3, Z = 4, ['10'] = 5, [2] = 6, [10] = 7 }",
            "local t = {} for i = 1, 200 do t['k' .. i] = i end return t",
            "local t = {} for i = 1, 100 do t[i] = { id = i, name = 'row' .. i } end return { rows = t }",
            "return { [1.5] = 1, [1] = 2, [-0.5] = 3, [math.maxinteger] = 4, [math.maxinteger - 1] = 5, x = 6, [2] = 7 }",
            "return { b = 1, a = 2, ['a\\0'] = 3, ['\\xff'] = 4, ['\\x7f'] = 5, [''] = 6, aa = 7 }",
            "return 'a string alone'",
            "return 42",
        ]
        for chunk in chunks {
            let (straight, copied, inC) = try both(chunk)
            XCTAssertEqual(straight, copied, chunk)
            // All valid UTF-8 but one: the C walk writes them, the same text.
            XCTAssertEqual(inC, !chunk.contains("\\xff"), chunk)
        }
    }

    func testAnEmptyTableIsAnArrayOnlyWithTheArrayMarker() throws {
        let lua = try LuaState()
        // An empty JSON array pushed into Lua carries the marker.
        let ref = try lua.ref(.value(["list": .table(LuaTable(isJSONArray: true)), "map": .table(LuaTable())]))
        XCTAssertEqual(String(decoding: try lua.jsonBytes(of: ref), as: UTF8.self), #"{"list":[],"map":{}}"#)
    }

    func testAMarkedListWithItemsIsAnArray() throws {
        // A table whose keys are all array keys but with the array marker: still an array.
        let lua = try LuaState()
        let ref = try lua.ref(.value(.table(LuaTable(array: [1, 2], isJSONArray: true))))
        XCTAssertEqual(String(decoding: try lua.jsonBytes(of: ref), as: UTF8.self), "[1,2]")
    }

    func testWhatJSONCannotHoldIsRefusedWithItsPath() throws {
        let cases: [(String, String)] = [
            ("return { a = { 0/0 } }", "state.a[1]"),
            ("return { a = { b = math.huge } }", "state.a.b"),
            ("return { list = { 1, print } }", "state.list[2]"),
            ("local t = { x = {} } t.x.self = t return t", "state.x.self"),
            ("return { m = setmetatable({}, { __index = function() end }) }", "state.m"),
            ("return { [true] = 1 }", "state"),
        ]
        for (chunk, path) in cases {
            let lua = try LuaState()
            let ref = try lua.call(try lua.load(string: chunk, name: "t"), []) { try $0.ref(1) }
            XCTAssertNil(lua.jsonBytesInC(of: ref), "the C walk gives up on \(chunk)")
            XCTAssertThrowsError(try lua.jsonBytes(of: ref, root: "state"), chunk) { error in
                XCTAssertTrue("\(error)".contains(path), "\(chunk): \(error)")
            }
        }
        // The stack is as it was: the state goes on working after a refusal.
        let lua = try LuaState()
        let bad = try lua.call(try lua.load(string: "return { 0/0 }", name: "t"), []) { try $0.ref(1) }
        for _ in 0..<100 { _ = try? lua.jsonBytes(of: bad) }
        XCTAssertEqual(try lua.call(try lua.load(string: "return 1 + 1", name: "t"), []) { try $0.integer(1) }, 2)
    }

    func testNestingIsLimited() throws {
        let lua = try LuaState()
        let ref = try lua.call(
            try lua.load(string: "local t = {} for i = 1, 500 do t = { t } end return t", name: "t"), []
        ) { try $0.ref(1) }
        XCTAssertThrowsError(try lua.jsonBytes(of: ref)) { error in
            XCTAssertTrue("\(error)".contains("nested deeper than"), "\(error)")
        }
    }
}
