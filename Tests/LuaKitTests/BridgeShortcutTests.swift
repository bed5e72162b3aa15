import LuaKit
import XCTest

/// The bridge's shortcuts must not change what crosses it: strings shared by address
/// within one read, arguments pushed without a protected call, paths built only on errors.
final class BridgeShortcutTests: XCTestCase {
    var lua: LuaState!

    override func setUpWithError() throws {
        lua = try LuaState()
    }

    // XCTest keeps every test case until the process exits: let the state go with the test.
    override func tearDown() { lua = nil }

    func testEveryStringOfALargeReadComesBackExact() throws {
        // Repeated keys (one interned string each) beside 3,000 distinct values: more strings
        // than the read's cache has slots, so slots are taken over many times.
        let rows = try lua.run(
            string: """
                local rows = {}
                for i = 1, 1000 do
                  rows[i] = { id = i, name = "user" .. i, email = "user" .. i .. "@example.com",
                              tag = (i % 2 == 0) and "even" or "odd", [("k" .. i % 7)] = "v" .. i }
                end
                return rows
                """, name: "rows")[0]
        for i in 1...1000 {
            let row = try XCTUnwrap(rows[i - 1], "row \(i)")
            XCTAssertEqual(row["id"], .integer(Int64(i)))
            XCTAssertEqual(row["name"], .string(LuaString("user\(i)")))
            XCTAssertEqual(row["email"], .string(LuaString("user\(i)@example.com")))
            XCTAssertEqual(row["tag"], .string(LuaString(i % 2 == 0 ? "even" : "odd")))
            XCTAssertEqual(row["k\(i % 7)"], .string(LuaString("v\(i)")))
            XCTAssertEqual(row.tableValue?.count, 5)
        }
    }

    func testABadKeyIsNamedByTheTableThatHoldsIt() throws {
        let fn = try lua.load(string: "return { a = { { [print] = 1 } } }", name: "key.lua")
        XCTAssertThrowsError(try lua.call(fn)) { error in
            XCTAssertTrue("\(error)".hasPrefix(#"argument #1.a[1]["(key)"]: a function cannot be copied"#), "\(error)")
        }
        // The stack is as it was: the state goes on working.
        XCTAssertEqual(try lua.run(string: "return 1 + 1", name: "after"), [2])
    }

    func testRefsAndScalarsArriveInOrder() throws {
        let table = try lua.ref(.value(["x": 1]))
        let describe = try lua.load(
            string: """
                local t = { n = select('#', ...) }
                for i = 1, t.n do local v = select(i, ...) t[i] = type(v) == "table" and "table " .. v.x or tostring(v) end
                return t
                """, name: "describe")
        let out = try lua.call(describe, [.ref(table), nil, true, 3, .value(.number(2.5)), .ref(table)])
        let expected = LuaTable(array: ["table 1", "nil", "true", "3", "2.5", "table 1"], hash: ["n": 6])
        XCTAssertEqual(out, [.table(expected)])
    }

    func testAReferenceFromAnotherStateIsRefused() throws {
        let other = try LuaState()
        let foreign = try other.ref(.value(["x": 1]))
        let identity = try lua.load(string: "return ...", name: "identity")
        // Beside scalars, beside a string (the small push), beside nested tables (the builder).
        let besides: [LuaPush] = [1, "a string", .value(["deep": ["er": [1, 2]]])]
        for other in besides {
            XCTAssertThrowsError(try lua.call(identity, [.ref(foreign), other]), "\(other)") { error in
                XCTAssertTrue("\(error)".contains("another Lua state"), "\(error)")
            }
        }
        XCTAssertEqual(try lua.call(identity, [1]), [1])
    }

    func testASwiftFunctionMayReturnMoreValuesThanTheMinimumStack() throws {
        try lua.setGlobal("many", .function { _ in (1...100).map { .value(.integer(Int64($0))) } })
        try lua.setGlobal("none", .function { _ in [] })
        XCTAssertEqual(
            try lua.run(string: "return select('#', many()), (select(100, many())), select('#', none())", name: "many"),
            [100, 100, 0])
    }
}
