import LuaKit
import XCTest

/// Values pushed into Lua and copied back out must come back identical.
final class LuaValueRoundTripTests: XCTestCase {
    var lua: LuaState!
    var identity: LuaRef!

    override func setUpWithError() throws {
        lua = try LuaState()
        identity = try lua.load(string: "return ...", name: "identity")
    }

    private func roundTrip(_ v: LuaValue, file: StaticString = #filePath, line: UInt = #line) throws -> LuaValue {
        let out = try lua.call(identity, [.value(v)])
        XCTAssertEqual(out.count, 1, file: file, line: line)
        return out[0]
    }

    func testScalarsKeepTheirKind() throws {
        for v: LuaValue in [nil, true, false, 0, 1, -1, 1.0, 0.5, "", "hello", .integer(.max), .integer(.min)] {
            XCTAssertEqual(try roundTrip(v), v)
        }
        XCTAssertNotEqual(try roundTrip(1), .number(1.0), "an integer stays an integer")
        XCTAssertEqual(try roundTrip(.number(1.0)), .number(1.0), "a float stays a float")
    }

    func testTablesOnEitherSideOfTheSmallPushComeBackTheSame() throws {
        // An action-sized table is pushed as operations on the stack; a larger one, a string
        // past that buffer, or an empty JSON array go through the general builder.
        var small = LuaTable()
        small["type"] = "add"
        small["n"] = .integer(3)
        small["x"] = .number(0.5)
        small["ok"] = .boolean(true)
        small["bytes"] = .string(LuaString(bytes: [0x61, 0, 0x62]))
        var big = LuaTable()
        for i in 0..<20 { big["k\(i)"] = .integer(Int64(i)) }
        let long = LuaValue.string(LuaString(String(repeating: "x", count: 300)))
        for v: LuaValue in [
            .table(small), .table(big), .table(LuaTable(hash: ["s": long])),
            .table(LuaTable(isJSONArray: true)), .table(LuaTable()),
        ] {
            XCTAssertEqual(try roundTrip(v), v)
        }
        let several = try lua.call(
            identity, [.value(.table(small)), .value(7), .value("seven"), .value(.table(small))])
        XCTAssertEqual(several, [.table(small), 7, "seven", .table(small)])
    }

    func testNegativeZeroAndNaN() throws {
        guard case .number(let z) = try roundTrip(.number(-0.0)) else { return XCTFail("not a float") }
        XCTAssertEqual(z.sign, .minus)
        guard case .number(let n) = try roundTrip(.number(.nan)) else { return XCTFail("not a float") }
        XCTAssertTrue(n.isNaN)
        XCTAssertEqual(try roundTrip(.number(.infinity)), .number(.infinity))
    }

    func testStringsAreBytes() throws {
        let zero = LuaValue.string(LuaString(bytes: [0x61, 0, 0x62]))
        XCTAssertEqual(try roundTrip(zero), zero)
        let invalid = LuaValue.string(LuaString(bytes: [0xff, 0xfe, 0x41]))
        XCTAssertEqual(try roundTrip(invalid), invalid)
        let len = try lua.call(try lua.load(string: "return #(...)", name: "len"), [.value(zero)])
        XCTAssertEqual(len, [.integer(3)])
    }

    func testTables() throws {
        let v: LuaValue = ["items": [1, 2.5, "x", ["nested": true]], "n": 3, "empty": .table(LuaTable())]
        XCTAssertEqual(try roundTrip(v).description, v.description)
        var mixed = LuaTable(array: [1, 2])
        mixed[.integer(10)] = "ten"
        mixed[.boolean(true)] = "yes"
        mixed[.number(0.5)] = "half"
        XCTAssertEqual(try roundTrip(.table(mixed)), .table(mixed))
    }

    func testEmptyJSONArrayStaysAnArray() throws {
        let arr = LuaValue.table(LuaTable(isJSONArray: true))
        XCTAssertEqual(try roundTrip(arr).tableValue?.isJSONArray, true)
        XCTAssertEqual(try roundTrip(.table(LuaTable())).tableValue?.isJSONArray, false)
    }

    func testSequenceWithHoleKeepsEveryEntry() throws {
        let out = try lua.run(string: "return {1, 2, nil, 4}", name: "hole")[0]
        XCTAssertEqual(out.tableValue?.count, 3)
        XCTAssertEqual(out.tableValue?[.integer(4)], 4)
    }

    func testDeepNestingIsAnErrorNotACrash() throws {
        // 10,000 levels built in Lua and read out.
        let deep = try lua.load(string: "local t = {} for i = 1, 10000 do t = { t } end return t", name: "deep.lua")
        XCTAssertThrowsError(try lua.call(deep)) { error in
            XCTAssertTrue("\(error)".contains("nested deeper than"), "\(error)")
        }
        // 10,000 levels built in Swift and pushed in.
        var v: LuaValue = 1
        for _ in 0..<10_000 { v = [v] }
        XCTAssertThrowsError(try roundTrip(v))
        // The state is still fine.
        XCTAssertEqual(try roundTrip(7), 7)
    }

    func testNestingJustUnderTheLimitComesBackWhole() throws {
        // Deep enough that pushing it grows the Lua stack several times over.
        var v: LuaValue = ["leaf": "here", "n": 1.5]
        for i in 0..<(LuaState.maxDepth - 2) {
            v = i % 2 == 0 ? [v, .integer(Int64(i))] : ["next": v, "i": .integer(Int64(i))]
        }
        XCTAssertEqual(try roundTrip(v), v)
    }

    func testCyclesAndFunctionsAreRefusedWithTheirPath() throws {
        let cycle = try lua.load(
            string: "local t = { items = { {}, {}, {} } } t.items[3].owner = t return t", name: "cycle.lua")
        XCTAssertThrowsError(try lua.call(cycle)) { error in
            XCTAssertEqual(
                error as? LuaError,
                .conversion(path: "argument #1.items[3].owner", reason: "a cycle: this table contains itself"))
        }
        let fn = try lua.load(string: "return { items = { {}, {}, { cb = print } } }", name: "fn.lua")
        XCTAssertThrowsError(try lua.call(fn)) { error in
            XCTAssertTrue("\(error)".hasPrefix("argument #1.items[3].cb: a function cannot be copied"), "\(error)")
        }
        let ud = try lua.load(string: "return { f = io.stdout }", name: "ud.lua")
        XCTAssertThrowsError(try lua.call(ud)) { error in
            XCTAssertTrue("\(error)".hasPrefix("argument #1.f: a userdata"), "\(error)")
        }
    }

    func testSharedSubtablesAreNotCycles() throws {
        let shared = try lua.run(string: "local row = { 1 } return { a = row, b = row }", name: "shared")[0]
        XCTAssertEqual(shared["a"], [1])
        XCTAssertEqual(shared["b"], [1])
    }

    func testMetamethodsNeverRunWhileReading() throws {
        let script = """
            ran = 0
            local t = setmetatable({ x = 1 }, {
              __index = function() ran = ran + 1; error("index ran") end,
              __pairs = function() ran = ran + 1; error("pairs ran") end,
              __len = function() ran = ran + 1; error("len ran") end,
            })
            return t
            """
        let out = try lua.run(string: script, name: "meta.lua")
        XCTAssertEqual(out, [["x": 1]])
        XCTAssertEqual(try lua.global("ran"), 0)
    }
}
