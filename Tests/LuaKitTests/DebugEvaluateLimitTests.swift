import Foundation
@testable import LuaKit
import XCTest

/// A debugger's `evaluate` is bounded and cannot be caught: an expression that loops (under
/// `pcall`, nested `pcall`s, `xpcall`), or one long C call (a pattern match, a huge
/// `string.rep`), ends after 2000 ms with an error no `pcall` inside it swallows, while the
/// feature is stopped in the debugger's hook with its own time limit held; afterwards the
/// stopped feature is as it was (its held limit, its hook, its variables). And what the
/// debugger shows can be let go (`releaseShown`), so a stop hit many times keeps nothing.
final class DebugEvaluateLimitTests: XCTestCase {
    private static let stopMessage = "evaluate ran longer than 2000 ms and was stopped; the run is as it was"
    /// The runaway expressions, each of which runs for ever without the limit.
    private static let runaways: [(what: String, expression: String)] = [
        ("a pcall loop", "(function() while true do pcall(function() while true do end end) end end)()"),
        (
            "a nested pcall loop",
            """
            (function() while true do pcall(function() while true do pcall(function() while true do end end) end end) end end)()
            """
        ),
        (
            "xpcall with a handler that loops",
            """
            (function() while true do xpcall(function() while true do end end, function() while true do end end) end end)()
            """
        ),
        (
            "a coroutine that loops",
            "(function() while true do coroutine.wrap(function() while true do end end)() end end)()"
        ),
        ("a long pattern match", "string.rep('a', 1e6):find('.-.-.-.-b')"),
        // The limit passes while string.rep copies 1 GB in C: it stops there, between pieces.
        (
            "a huge string.rep",
            """
            (function() local t = os.clock() while os.clock() - t < 1.95 do end return #string.rep('x', 1e9) end)()
            """
        ),
    ]

    /// The feature: `handle` stops at line 4 (a breakpoint) with `n` and `m` in scope.
    private static let script = """
        local mode = ...
        local function handle(n)
          local m = { n = n, items = { 1, 2, 3 } }
          local x = n + 1
          if mode == "runaway" then while true do end end
          return x
        end
        return handle(41)
        """
    private static let path = "/work/plugins/limit/init.lua"

    /// What a stop function saw, written on the state's thread and read after the run.
    private final class Seen: @unchecked Sendable {
        var stops: [(reason: LuaStopReason, line: Int)] = []
        var results: [(what: String, error: String?, seconds: Double)] = []
        var texts: [String] = []
        var resumedAt: Date?
    }

    private func timed(_ body: () throws -> LuaVariable) -> (error: String?, text: String?, seconds: Double) {
        let start = Date()
        do {
            let value = try body()
            return (nil, value.text, Date().timeIntervalSince(start))
        } catch {
            return ("\(error)", nil, Date().timeIntervalSince(start))
        }
    }

    private func assertStopped(_ seen: Seen, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(seen.results.map(\.what), Self.runaways.map(\.what), file: file, line: line)
        for result in seen.results {
            XCTAssertTrue(
                result.error?.contains(Self.stopMessage) == true, "\(result.what): \(result.error ?? "no error")",
                file: file, line: line)
            XCTAssertLessThan(
                result.seconds, 10, "\(result.what) stopped in \(result.seconds) s", file: file, line: line)
            XCTAssertGreaterThan(result.seconds, 1.5, "\(result.what) ran its 2000 ms", file: file, line: line)
        }
        let worst = seen.results.map(\.seconds).max() ?? 0
        print(
            "DebugEvaluateLimitTests: worst stop \(String(format: "%.3f", worst)) s;",
            seen.results.map { "\($0.what) \(String(format: "%.3f", $0.seconds))" }.joined(separator: ", "))
    }

    func testRunawayEvaluationsStopAndTheStoppedFeatureGoesOnAsItWas() throws {
        let lua = try LuaState(timeLimitMs: 1000)
        let holder = try lua.makeTable([])
        let chunk = try lua.load(string: Self.script, name: "plugins/limit/init.lua")
        let seen = Seen()
        lua.startDebugging { stop in
            seen.stops.append((stop.reason, stop.line))
            if seen.stops.count == 1 {
                for runaway in Self.runaways {
                    let result = self.timed { try stop.thread.evaluate(runaway.expression, level: 0, holder: holder) }
                    seen.results.append((runaway.what, result.error, result.seconds))
                }
                for expression in ["1 + 1", "m.n", "#m.items", "n"] {
                    seen.texts.append(
                        (try? stop.thread.evaluate(expression, level: 0, holder: holder).text) ?? "failed")
                }
                // The debugger's hook is as it was: a step stops at the next line.
                return .stepOver
            }
            if seen.stops.count == 3 {
                // A runaway again, then the feature's own loop: its limit still stops it.
                seen.texts.append(
                    self.timed { try stop.thread.evaluate(Self.runaways[0].expression, level: 0) }.error ?? "no error")
                seen.resumedAt = Date()
            }
            return .run
        }
        lua.setBreakpointLines(path: Self.path, lines: [4])

        // The run stopped for more than 10 s with a 1000 ms limit, and finishes as it would have.
        XCTAssertEqual(try lua.call(chunk, ["plain"]), [42])
        assertStopped(seen)
        XCTAssertEqual(seen.texts, ["2", "41", "3", "41"], "the stopped frame's variables are as they were")
        XCTAssertEqual(
            seen.stops.map(\.line), [4, 5], "the breakpoint, then the step: the debugger's hook is as it was")
        XCTAssertEqual(seen.stops.map(\.reason), [.breakpoint, .step])

        // The feature's own limit still stops a runaway handler, after a runaway evaluation.
        XCTAssertThrowsError(try lua.call(chunk, ["runaway"])) { error in
            guard case .timeout(1000, _)? = error as? LuaError else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(seen.stops.count, 3)
        XCTAssertTrue(seen.texts.last?.contains(Self.stopMessage) == true, seen.texts.last ?? "")
        let resumed = try XCTUnwrap(seen.resumedAt)
        let ranFor = Date().timeIntervalSince(resumed)
        XCTAssertGreaterThan(ranFor, 0.5, "the evaluation's time is not the feature's: it had its limit left")
        XCTAssertLessThan(ranFor, 10)

        lua.setBreakpointLines(path: Self.path, lines: [])
        XCTAssertThrowsError(try lua.run(string: "while true do end", name: "spin.lua")) { error in
            guard case .timeout(1000, _)? = error as? LuaError else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(try lua.call(chunk, ["plain"]), [42])
    }

    /// Stopped at its own time limit's error: the evaluation stops, and the run then fails
    /// with its time limit, as it would have.
    func testAStopAtTheTimeLimitStaysATimeLimitAfterARunawayEvaluation() throws {
        let lua = try LuaState(timeLimitMs: 300)
        let chunk = try lua.load(string: Self.script, name: "plugins/limit/init.lua")
        let seen = Seen()
        lua.startDebugging { stop in
            seen.stops.append((stop.reason, stop.line))
            seen.texts.append(
                self.timed { try stop.thread.evaluate(Self.runaways[1].expression, level: 0) }.error ?? "no error")
            seen.texts.append((try? stop.thread.evaluate("1 +", level: 0).text) ?? "failed")
            seen.texts.append((try? stop.thread.evaluate("n * 2", level: 1).text) ?? "failed")
            return .run
        }
        lua.stopOnErrors(uncaught: true, caught: false)
        XCTAssertThrowsError(try lua.call(chunk, ["runaway"])) { error in
            guard case .timeout(300, _)? = error as? LuaError else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(seen.stops.map(\.line), [5])
        XCTAssertTrue(seen.texts.first?.contains(Self.stopMessage) == true, seen.texts.first ?? "")
        XCTAssertEqual(Array(seen.texts.dropFirst()), ["failed", "82"])
        XCTAssertEqual(try lua.call(chunk, ["plain"]), [42])
    }

    /// From a Swift function the feature called (no debugger's stop): in a state with no time
    /// limit at all, and inside a call with one, which goes on and returns.
    func testAnEvaluationFromASwiftFunctionIsBoundedToo() throws {
        // With a limit, the evaluation's time is the call's own (no debugger holds it): 2 s of its 3.
        for limit in [nil, 3000] as [Int64?] {
            let lua = try LuaState(timeLimitMs: limit)
            let seen = Seen()
            try lua.setGlobal(
                "look",
                .function { slots in
                    // (With no limit the state keeps Lua's own matcher and string.rep: not stopped in C.)
                    for runaway in Self.runaways.prefix(limit == nil ? 4 : 1) {
                        let result = self.timed { try slots.evaluate(runaway.expression, level: 1) }
                        seen.results.append((runaway.what, result.error, result.seconds))
                    }
                    seen.texts.append((try? slots.evaluate("x + 1", level: 1).text) ?? "failed")
                    return []
                })
            XCTAssertEqual(
                try lua.run(string: "local x = 1 look() return x + 1", name: "plugins/look.lua"), [2], "\(limit as Any)"
            )
            XCTAssertEqual(seen.texts, ["2"])
            for result in seen.results {
                XCTAssertTrue(
                    result.error?.contains(Self.stopMessage) == true, "\(result.what): \(result.error ?? "no error")")
                XCTAssertLessThan(result.seconds, 10)
            }
            print(
                "DebugEvaluateLimitTests: from a Swift function, limit \(limit.map(String.init) ?? "none"):",
                seen.results.map { "\($0.what) \(String(format: "%.3f", $0.seconds))" }.joined(separator: ", "))
            if limit != nil {
                XCTAssertThrowsError(try lua.run(string: "while true do end", name: "spin.lua")) { error in
                    guard case .timeout? = error as? LuaError else { return XCTFail("\(error)") }
                }
            }
        }
    }

    // MARK: - What the debugger pins, and its release

    func testAConditionOrAnUnkeptEvaluationKeepsNothingAndAReleaseStartsRefsAgain() throws {
        let lua = try LuaState(timeLimitMs: 1000)
        let holder = try lua.makeTable([])
        let length = try lua.load(string: "local h = ... return rawlen(h), next(h) == nil", name: "len.lua")
        let chunk = try lua.load(string: Self.script, name: "plugins/limit/init.lua")
        final class Refs: @unchecked Sendable { var refs: [Int?] = [] }
        let refs = Refs()
        lua.startDebugging { stop in
            for expression in ["m", "m.items", "n > 40", "m.n"] {
                refs.refs.append(try? stop.thread.evaluate(expression, level: 0).ref)
            }
            refs.refs.append(try? stop.thread.evaluate("m", level: 0, holder: holder).ref)
            refs.refs.append(try? stop.thread.evaluate("m.items", level: 0, holder: holder).ref)
            refs.refs.append(try? stop.thread.evaluate("n", level: 0, holder: holder).ref)
            try? stop.thread.releaseShown(holder: holder)
            refs.refs.append(try? stop.thread.evaluate("m.items", level: 0, holder: holder).ref)
            return .run
        }
        lua.setBreakpointLines(path: Self.path, lines: [4])
        XCTAssertEqual(try lua.call(chunk, ["plain"]), [42])
        XCTAssertEqual(
            refs.refs, [nil, nil, nil, nil, 1, 2, nil, 1],
            "unkept: no ref; kept: refs from 1, and from 1 again after the release")
        XCTAssertEqual(try lua.call(length, [.ref(holder)]), [1, false])
        try lua.releaseShown(holder: holder)
        XCTAssertEqual(try lua.call(length, [.ref(holder)]), [0, true], "released between calls")
        let other = try LuaState()
        XCTAssertThrowsError(try other.releaseShown(holder: holder), "another state's holder")
    }

    /// Stops `hits` times at a line where `m` is a new table of about 1 MB, each time
    /// listing the frame's locals, a field of `m` and evaluating it, releasing what was shown
    /// after each when `release`. Returns the growth of the state's memory across the run.
    private func growth(hits: Int, release: Bool) throws -> Int {
        let lua = try LuaState(memoryLimit: 64 << 20, timeLimitMs: 10_000)
        let holder = try lua.makeTable([])
        let chunk = try lua.load(
            string: """
                local hits = ...
                local big = {}
                for j = 1, 1 << 16 do big[j] = j end
                for i = 1, hits do
                  local m = table.move(big, 1, #big, 1, {})
                  local seen = #m
                end
                return hits
                """, name: "plugins/big/init.lua")
        final class Failure: @unchecked Sendable { var error: (any Error)? }
        let failure = Failure()
        var hit = 0
        lua.startDebugging { stop in
            do {
                let locals = try stop.thread.variables(.locals, level: 0, holder: holder)
                let m = try XCTUnwrap(locals.first { $0.name == "m" }?.ref)
                // Its fields (1,000 of them listed) now and then: a listing costs more than a stop.
                hit += 1
                if hit % 50 == 1 { _ = try stop.thread.fields(of: m, holder: holder) }
                _ = try stop.thread.evaluate("m", level: 0, holder: holder)
                _ = try stop.thread.evaluate("#m > 0", level: 0)
                if release { try stop.thread.releaseShown(holder: holder) }
            } catch {
                if failure.error == nil { failure.error = error }
            }
            return .run
        }
        lua.setBreakpointLines(path: "/work/plugins/big/init.lua", lines: [6])
        lua.collectGarbage()
        let before = lua.memoryInUse
        XCTAssertEqual(try lua.call(chunk, [.value(.integer(Int64(hits)))]), [.integer(Int64(hits))])
        if let error = failure.error { throw error }
        lua.collectGarbage()
        return lua.memoryInUse - before
    }

    func testReleasingWhatWasShownKeepsAStopHitThousandsOfTimesWithinTheMemoryLimit() throws {
        // 2,000 tables of 1 MB shown, under a 64 MB limit: nothing fails, nothing is kept.
        let released = try growth(hits: 2000, release: true)
        // Kept, 40 of them already hold 40 MB.
        let kept = try growth(hits: 40, release: false)
        print(
            "DebugEvaluateLimitTests: growth with release \(released) bytes over 2000 stops; without, \(kept) bytes over 40"
        )
        XCTAssertGreaterThan(kept, 30 << 20)
        XCTAssertLessThan(released, kept / 10)
        XCTAssertLessThan(released, 256 << 10)
    }
}
