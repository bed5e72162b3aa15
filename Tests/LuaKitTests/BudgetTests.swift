import Foundation
import LuaKit
import XCTest

final class BudgetTests: XCTestCase {
    func testMemoryLimitIsNeverExceededAndTheStateRecovers() throws {
        let limit = 8 << 20
        let lua = try LuaState(memoryLimit: limit)
        lua.resetPeakMemory()
        XCTAssertThrowsError(
            try lua.run(string: "local t = {} for i = 1, 1e9 do t[i] = ('x'):rep(64) .. i end", name: "hog.lua")
        ) { error in
            XCTAssertEqual(error as? LuaError, .memory(limit: limit))
        }
        XCTAssertLessThanOrEqual(lua.peakMemory, limit)
        lua.collectGarbage()
        XCTAssertEqual(try lua.run(string: "return #('ok'):rep(1000)", name: "after"), [2000], "usable afterwards")
    }

    func testTheCollectorIsGenerationalAndShortLivedGarbageStaysUnderTheLimit() throws {
        // A host's state collects as lua5.4 does: what a call makes and drops dies young.
        let lua = try LuaState(memoryLimit: 4 << 20, timeLimitMs: 1000)
        XCTAssertEqual(
            try lua.run(string: "return collectgarbage('incremental'), collectgarbage('generational')", name: "mode"),
            ["generational", "incremental"])
        // 200 calls of ~100 KB each that they drop: 20 MB made, under a 4 MB limit.
        for i in 0..<200 {
            XCTAssertEqual(
                try lua.run(
                    string: "local t = {} for i = 1, 1000 do t[i] = { i, tostring(i) } end return #t",
                    name: "churn \(i)"), [1000])
        }
    }

    func testMemoryErrorInsidePcallIsCatchable() throws {
        let lua = try LuaState(memoryLimit: 4 << 20)
        let out = try lua.run(string: "local ok, e = pcall(string.rep, 'x', 1e8) return ok, e", name: "t")
        XCTAssertEqual(out, [false, "not enough memory"])
    }

    private func assertStopped(
        _ source: String, limitMs: Int64 = 200, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let lua = try LuaState(timeLimitMs: limitMs)
        // Without the stop these never end; how fast they stop belongs in a benchmark, not here.
        XCTAssertThrowsError(try lua.run(string: source, name: "runaway.lua"), file: file, line: line) { error in
            guard case .timeout(let ms, _) = error as? LuaError else {
                return XCTFail("\(error)", file: file, line: line)
            }
            XCTAssertEqual(ms, limitMs, file: file, line: line)
        }
        // The state is usable after the stop, with a fresh budget (a budget of a few ms is for
        // the stop alone: on a loaded machine even `return 1` can outlast it).
        guard limitMs >= 100 else { return }
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
        // coroutine.resume catches errors, but a stopped call still fails as a whole.
        XCTAssertThrowsError(try lua.run(string: "local ok, e = coroutine.resume(co) return ok, e", name: "resume.lua"))
        { error in
            guard case .timeout = error as? LuaError else { return XCTFail("\(error)") }
        }
    }

    func testCoroutineStopReportsTimeout() throws {
        let lua = try LuaState(timeLimitMs: 150)
        try lua.run(string: "co = coroutine.wrap(function() while true do end end)", name: "setup.lua")
        XCTAssertThrowsError(try lua.run(string: "co()", name: "resume.lua")) { error in
            guard case .timeout = error as? LuaError else { return XCTFail("\(error)") }
        }
    }

    // MARK: - The watchdog: invisible, unremovable, and it stops long C calls

    func testAScriptSeesNoHookOfOurs() throws {
        let lua = try LuaState(timeLimitMs: 5000)
        XCTAssertEqual(try lua.run(string: "return debug.gethook()", name: "peek.lua"), [.nil])
        let own = "debug.sethook(function() end, 'l') local f, m = debug.gethook() debug.sethook() return type(f), m"
        XCTAssertEqual(
            try lua.run(string: own, name: "own.lua"), ["function", "l"], "a script's own hook works as in Lua")
    }

    func testDebugSethookCannotRemoveTheLimit() throws {
        try assertStopped("debug.sethook() while true do end")
        try assertStopped("while true do debug.sethook() end")
        try assertStopped("debug.sethook(function() end, '', 1e9) while true do end")
    }

    func testALongPatternMatchIsStopped() throws {
        try assertStopped("return ('a'):rep(1e6):find('.-.-.-.-.-b')")
        try assertStopped("return pcall(string.match, ('a'):rep(3e5), '.-.-.-.-b')")
        try assertStopped("return ('a'):rep(3e5):gsub('.-.-.-.-b', '')")
        try assertStopped("for m in ('a'):rep(3e5):gmatch('.-.-.-.-b') do end")
        try assertStopped("return ('('):rep(3e5):find('%b()%b()%b()x')")
    }

    func testAMemoryLimitOfNoBytesOrFewerIsRefusedWithoutATrap() throws {
        for limit in [0, -1, Int.min] {
            XCTAssertThrowsError(try LuaState(memoryLimit: limit), "\(limit)") { error in
                XCTAssertEqual(error as? LuaError, .memory(limit: limit))
            }
        }
        let huge = try LuaState(memoryLimit: Int.max)
        XCTAssertEqual(try huge.run(string: "return #string.rep('x', 1 << 20)", name: "t"), [.integer(1 << 20)])
    }

    func testStringRepOfNothingReturnsAtOnceAndALongOneKeepsTheLimit() throws {
        // Lua's own string.rep copies nothing n times: for math.maxinteger, forever in C.
        let lua = try LuaState(timeLimitMs: 2000)
        XCTAssertEqual(
            try lua.run(
                string: "return #string.rep('', math.maxinteger), #string.rep('', 2^62, ''), ('x'):rep(0)",
                name: "rep.lua"),
            [0, 0, ""])
        try assertStopped("while true do string.rep('', math.maxinteger) end")
        // A long result is copied in pieces that look at the deadline between them.
        try assertStopped("return #string.rep('ab', 150 << 20, ',')", limitMs: 1)
        // What it makes is what Lua's own makes, separators and all.
        let same = """
            local function rep(s, n, sep) local t = {} for i = 1, n do t[i] = s end return table.concat(t, sep) end
            for _, c in ipairs { { 'ab', 5, ',' }, { 'abc', 3 }, { '', 4, '-' }, { 'x', 1, '--' }, { 'xy', 300000, '-' }, { 'q', 1 << 21 } } do
              if string.rep(c[1], c[2], c[3]) ~= rep(c[1], c[2], c[3] or '') then return 'differs: ' .. c[1] .. ' ' .. c[2] end
            end
            return select(2, pcall(string.rep, 'ab', 1 << 40))
            """
        XCTAssertEqual(try lua.run(string: same, name: "rep.lua"), ["resulting string too large"])
    }

    func testACoroutineStoppedInOneCallRunsInTheNext() throws {
        let lua = try LuaState(timeLimitMs: 150)
        try lua.run(
            string:
                "co = coroutine.wrap(function() for i = 1, math.huge do if i % 2e7 == 0 then coroutine.yield(i) end end end)",
            name: "setup.lua")
        try lua.run(
            string: "worker = coroutine.create(function(n) while true do n = coroutine.yield(n + 1) end end)",
            name: "setup.lua")
        XCTAssertThrowsError(try lua.run(string: "while true do co() end", name: "spin.lua"))
        XCTAssertEqual(try lua.run(string: "return coroutine.resume(worker, 1)", name: "next.lua"), [true, 2])
        XCTAssertEqual(try lua.run(string: "return coroutine.resume(worker, 5)", name: "next.lua"), [true, 6])
    }
}
