import Foundation
import LuaKit
import XCTest

/// The host's callout runs once, when asked for, before Lua next calls out into code that may
/// block: a Swift function, or under the trusted profile os.execute and the io library (where a
/// stuck call would leave what the host kept in Lua out of reach: issue 48, item 17).
final class CalloutTests: XCTestCase {
    func testTheCalloutRunsOnceBeforeLuaNextCallsASwiftFunction() throws {
        let lua = try LuaState(timeLimitMs: 1000)
        var order: [String] = []
        try lua.registerCallout(
            try lua.ref(
                .function { _ in
                    order.append("callout"); return []
                }))
        let chunk = try lua.load(string: "local f = ... f() f()", name: "calls.lua")
        let swift: LuaPush = .function { _ in
            order.append("swift"); return []
        }
        try lua.call(chunk, [swift])
        XCTAssertEqual(order, ["swift", "swift"], "not asked for: not run")
        order = []
        lua.wantCallout()
        try lua.call(chunk, [swift])
        XCTAssertEqual(order, ["callout", "swift", "swift"])
    }

    func testTheCalloutRunsBeforeTheIOLibraryAndOsExecute() throws {
        let lua = try LuaState(timeLimitMs: 1000)
        var calls = 0
        try lua.registerCallout(
            try lua.ref(
                .function { _ in
                    calls += 1; return []
                }))
        for code in ["os.execute('true')", "io.write('')", "local f = io.open('/dev/null') f:read('a') f:close()"] {
            calls = 0
            lua.wantCallout()
            _ = try lua.run(string: code, name: "io.lua")
            XCTAssertEqual(calls, 1, code)
        }
    }
}
