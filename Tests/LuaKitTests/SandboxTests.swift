import LuaKit
import XCTest

/// One test per capability the sandboxed profile removes, and what stays.
final class SandboxTests: XCTestCase {
    var lua: LuaState!
    override func setUpWithError() throws { lua = try LuaState(profile: .sandboxed) }
    // XCTest keeps every test case until the process exits: let the state go with the test.
    override func tearDown() { lua = nil }

    private func eval(_ source: String) throws -> [LuaValue] { try lua.run(string: source, name: "plugin.lua") }

    private func assertFails(_ source: String, _ fragment: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try eval(source), file: file, line: line) { error in
            XCTAssertTrue("\(error)".contains(fragment), "\(error)", file: file, line: line)
        }
    }

    func testOsExecuteIsGone() throws {
        XCTAssertEqual(try eval("return os.execute, os.exit, os.remove, os.getenv"), [nil, nil, nil, nil])
        XCTAssertEqual(try eval("return type(os.time())"), ["number"], "harmless os functions stay")
    }

    func testIoIsGone() throws {
        XCTAssertEqual(try eval("return io, dofile, loadfile"), [nil, nil, nil])
        assertFails("return require 'io'", "module 'io' not found")
    }

    func testDebugIsGone() throws {
        XCTAssertEqual(try eval("return debug"), [nil])
        assertFails("return require 'debug'", "module 'debug' not found")
    }

    func testLoadlibAndCModulesAreGone() throws {
        XCTAssertEqual(try eval("return package.loadlib, package.searchers[3], package.searchers[4]"), [nil, nil, nil])
        assertFails("return require 'cjson'", "module 'cjson' not found")
    }

    /// One plugin cannot stop or retune the collector every plugin in the state shares
    /// (a sibling then failed with "not enough memory"); looking and helping stay.
    func testCollectgarbageMayLookAndHelpButNotStopOrRetune() throws {
        for option in ["stop", "restart", "setpause", "setstepmul", "incremental", "generational"] {
            assertFails("collectgarbage('\(option)')", "collectgarbage(\"\(option)\") is refused in the sandbox")
        }
        XCTAssertEqual(try eval("return collectgarbage('isrunning')"), [true], "still running")
        XCTAssertEqual(
            try eval("return type(collectgarbage('count')), type(collectgarbage('step')), collectgarbage()"),
            ["number", "boolean", 0])
    }

    func testBinaryChunksAreRefused() throws {
        assertFails("return load('\\27Lua', 'x', 'b')", "binary chunks are refused")
        XCTAssertEqual(try eval("return load('return 1 + 1')()"), [2], "text chunks load")
        XCTAssertEqual(
            try eval("local env = { y = 5 } return load('return y', 'c', 't', env)()"), [5], "with an environment")
    }

    func testGcMetamethodsAreRefused() throws {
        assertFails("setmetatable({}, { __gc = function() while true do end end })", "__gc metamethods are refused")
        XCTAssertEqual(try eval("return getmetatable(setmetatable({}, { __index = { a = 1 } })).__index.a"), [1])
    }

    func testStandardLibraryTablesAreReadOnly() throws {
        assertFails("string.rep = nil", "read-only table string")
        assertFails("math.pi = 3", "read-only table math")
        assertFails("rawset(table, 'insert', print)", "read-only")
        assertFails("getmetatable('').__index = {}", "attempt to index")
        XCTAssertEqual(try eval("return ('ab'):rep(2), math.floor(2.5), #table.pack(1, 2)"), ["abab", 2, 2])
        XCTAssertEqual(try eval("local n = 0 for _ in pairs(string) do n = n + 1 end return n > 10"), [true])
    }

    func testTrustedProfileKeepsEverything() throws {
        let trusted = try LuaState()
        XCTAssertEqual(
            try trusted.run(string: "return type(io), type(debug), type(os.execute)", name: "t"),
            ["table", "table", "function"])
    }

    func testNativeModuleLoadsInATrustedState() throws {
        let trusted = try LuaState()
        let out = try trusted.run(string: "local cjson = require 'cjson' return cjson.encode({ 1, 2, 3 })", name: "t")
        XCTAssertEqual(out, ["[1,2,3]"])
    }
}
