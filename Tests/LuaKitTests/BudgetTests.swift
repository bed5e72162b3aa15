import Foundation
import LuaKit
import XCTest

final class BudgetTests: XCTestCase {
    func testMemoryLimitIsNeverExceededAndTheStateRecovers() throws {
        let limit = 8 << 20
        let lua = try LuaState(memoryLimit: limit)
        lua.resetPeakMemory()
        XCTAssertThrowsError(try lua.run(string: "local t = {} for i = 1, 1e9 do t[i] = ('x'):rep(64) .. i end", name: "hog.lua")) { error in
            XCTAssertEqual(error as? LuaError, .memory(limit: limit))
        }
        XCTAssertLessThanOrEqual(lua.peakMemory, limit)
        lua.collectGarbage()
        XCTAssertEqual(try lua.run(string: "return #('ok'):rep(1000)", name: "after"), [2000], "usable afterwards")
    }

    func testMemoryErrorInsidePcallIsCatchable() throws {
        let lua = try LuaState(memoryLimit: 4 << 20)
        let out = try lua.run(string: "local ok, e = pcall(string.rep, 'x', 1e8) return ok, e", name: "t")
        XCTAssertEqual(out, [false, "not enough memory"])
    }

    private func assertStopped(_ source: String, limitMs: Int64 = 200, file: StaticString = #filePath, line: UInt = #line) throws {
        let lua = try LuaState(timeLimitMs: limitMs)
        let start = Date()
        XCTAssertThrowsError(try lua.run(string: source, name: "runaway.lua"), file: file, line: line) { error in
            guard case .timeout(let ms, _) = error as? LuaError else { return XCTFail("\(error)", file: file, line: line) }
            XCTAssertEqual(ms, limitMs, file: file, line: line)
        }
        let elapsed = Date().timeIntervalSince(start) * 1000
        XCTAssertLessThan(elapsed, Double(limitMs) + 100, "stopped within the limit plus 100 ms", file: file, line: line)
        // The state is usable after the stop, with a fresh budget.
        XCTAssertEqual(try lua.run(string: "return 1", name: "after"), [1], file: file, line: line)
    }

    func testInfiniteLoopIsStopped() throws {
        try assertStopped("while true do end")
    }

    func testPcallCannotSwallowTheStop() throws {
        try assertStopped("while true do pcall(function() while true do end end) end")
        try assertStopped("local n = 0 while true do n = n + (select(2, pcall(error, 'x')) and 1 or 0) end")
    }

    func testCoroutineCreatedBeforeTheCallIsStopped() throws {
        let lua = try LuaState(timeLimitMs: 200)
        try lua.run(string: "co = coroutine.create(function() while true do end end)", name: "setup.lua")
        let start = Date()
        // coroutine.resume catches errors, but a stopped call still fails as a whole.
        XCTAssertThrowsError(try lua.run(string: "local ok, e = coroutine.resume(co) return ok, e", name: "resume.lua")) { error in
            guard case .timeout = error as? LuaError else { return XCTFail("\(error)") }
        }
        XCTAssertLessThan(Date().timeIntervalSince(start) * 1000, 300)
    }

    func testCoroutineStopReportsTimeout() throws {
        let lua = try LuaState(timeLimitMs: 150)
        try lua.run(string: "co = coroutine.wrap(function() while true do end end)", name: "setup.lua")
        XCTAssertThrowsError(try lua.run(string: "co()", name: "resume.lua")) { error in
            guard case .timeout = error as? LuaError else { return XCTFail("\(error)") }
        }
    }
}
