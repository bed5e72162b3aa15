import Foundation
import XCTest

/// Code Lua's hooks do not reach (loops with hooks off, one long C call, a huge error
/// message, a pattern match), and a loop on the real clock: each stops at the time limit and
/// the run goes on.
final class HooklessCodeTests: ScratchTestCase {
    /// `moonflow run` on the real clock (the default) runs Lua on a libdispatch worker,
    /// which blocked the watchdog's signal: a `while true do end` was declared stuck at
    /// limit + 2 s and spun on at 100% CPU. Now it stops at its limit and the run goes on.
    func testALuaLoopStopsAtItsLimitOnTheRealClock() throws {
        try write(
            "plugins/spin/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "spin", initial = { n = 0 }, actions = { spin = {}, bump = {} }, mutations = { bump = {} },
              handle = function(a) if a.type == "spin" then while true do end end return { type = "bump" } end,
              reduce = function(s) s.n = s.n + 1 return s end,
            }
            """)
        for extra in [[], ["--sandbox"]] {
            let result = try Moonflow.run(
                ["run", "plugins/spin", "--format", "jsonl", "--actions", "-", "--time-limit", "200"] + extra,
                in: scratch, input: "{\"type\":\"spin\"}\n{\"type\":\"spin\"}\n{\"type\":\"bump\"}\n")
            let errors = jsonlErrors(result.stdout)
            XCTAssertEqual(errors.count, 2, "\(extra): \(result.stdout)")
            for message in errors {
                XCTAssertTrue(message.hasPrefix("time limit of 200 ms exceeded"), "\(extra): \(message)")
            }
            XCTAssertFalse(result.stdout.contains("cannot be interrupted"), "\(extra): \(result.stdout)")
            XCTAssertTrue(
                result.stdout.contains("\"state\":{\"n\":1}"),
                "the run goes on in the same host (\(extra)): \(result.stdout)")
        }
    }

    /// Loops in places Lua runs with hooks off, or inside one long C call; `debug`
    /// and `__gc` ones need the trusted profile.
    private static let hooklessLoops: [(kind: String, code: String, trustedOnly: Bool)] = [
        ("xpcall", "xpcall(function() while true do end end, function() while true do end end)", false),
        ("handler", "xpcall(error, function() while true do end end, 'x')", false),
        (
            "close",
            """
            local co = coroutine.create(function()
              local x <close> = setmetatable({}, { __close = function() while true do end end })
              coroutine.yield()
            end)
            coroutine.resume(co)
            coroutine.close(co)
            """, false
        ),
        // the sandbox refuses __gc
        ("gc", "setmetatable({}, { __gc = function() while true do end end }); collectgarbage()", true),
        ("hook", "debug.sethook(function() while true do end end, '', 1)", true),
        ("sort", "local t = {} for i = 1, 4000000 do t[i] = (i * 7919) % 1000003 end table.sort(t)", false),
        ("move", "table.move({}, 1, math.maxinteger - 1, 1, {})", false),
        // Lua's own string.rep copies an empty string n times.
        ("rep", "while true do string.rep('', math.maxinteger) string.rep('', 2^62, '') end", false),
    ]

    func testLoopsWhereHooksAreOffAreStoppedAndTheRunGoesOn() throws {
        for sandbox in [false, true] {
            let loops = Self.hooklessLoops.filter { !sandbox || !$0.trustedOnly }
            let branches = loops.map { "if k == \"\($0.kind)\" then\n\($0.code)\nend" }.joined(separator: "\n")
            try write(
                "plugins/hang/init.lua",
                """
                local mf = require "moonflow"
                return mf.feature {
                  name = "hang", initial = { n = 0 }, actions = { go = { k = "string" }, bump = {} }, mutations = { bump = {} },
                  handle = function(a)
                    if a.type == "bump" then return { type = "bump" } end
                    local k = a.k
                    \(branches)
                  end,
                  reduce = function(s) s.n = s.n + 1 return s end,
                }
                """)
            let lines = loops.flatMap { [#"{"type":"go","k":"\#($0.kind)"}"#, #"{"type":"bump"}"#] }
            let result = try runJSONL("hang", lines, ["--time-limit", "200"] + (sandbox ? ["--sandbox"] : []))
            XCTAssertEqual(result.status, 1, result.stderr)
            let stopped = jsonlErrors(result.stdout).filter { $0.contains("time limit of 200 ms exceeded") }
            XCTAssertEqual(stopped.count, loops.count, "sandbox: \(sandbox)\n" + result.stdout)
            XCTAssertEqual(
                jsonlLastState(result.stdout)?["n"] as? Int, loops.count,
                "every bump after a stop ran (sandbox: \(sandbox))")
        }
    }

    func testLoopsWhereHooksAreOffAreStoppedUnderExec() throws {
        for sandbox in [false, true] {
            for loop in Self.hooklessLoops where !sandbox || !loop.trustedOnly {
                try write("loop.lua", loop.code + "\nprint('not reached')\n")
                let result = try Moonflow.run(
                    ["exec", "--time-limit", "200"] + (sandbox ? ["--sandbox"] : []) + ["loop.lua"], in: scratch)
                XCTAssertEqual(result.status, 1, "\(loop.kind): " + result.stderr)
                XCTAssertTrue(result.stderr.contains("time limit of 200 ms exceeded"), "\(loop.kind): " + result.stderr)
                XCTAssertFalse(result.stdout.contains("not reached"), loop.kind)
            }
        }
    }

    func testLoopsWhereHooksAreOffAreStoppedInSpecs() throws {
        let branches = Self.hooklessLoops.map { loop in
            "  it(\"\(loop.kind)\", function()\n\(loop.code)\n  end)"
        }.joined(separator: "\n")
        try write(
            "plugins/hang/init.lua",
            "return require('moonflow').feature { name = 'hang', initial = {}, actions = {}, mutations = {}, handle = function() end, reduce = function(s) return s end }\n"
        )
        try write(
            "plugins/hang/spec/hang_spec.lua",
            "describe(\"loops\", function()\n\(branches)\n  it(\"runs after\", function() end)\nend)\n")
        let result = try Moonflow.run(["test", "--time-limit", "20", "plugins/hang"], in: scratch)
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("\(Self.hooklessLoops.count) failed"), result.stdout)
        XCTAssertTrue(result.stdout.contains("1 passed"), result.stdout)
    }

    func testAHugeErrorMessageIsCutWithItsSizeSaid() throws {
        try write(
            "plugins/loud/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "loud", initial = { n = 0 }, actions = { go = {} }, mutations = {},
              handle = function() error(string.rep("E", 20 << 20)) end, reduce = function(s) return s end,
            }
            """)
        let result = try runJSONL("loud", [#"{"type":"go"}"#], ["--time-limit", "5000"])
        let message = try XCTUnwrap(jsonlErrors(result.stdout).first, result.stdout)
        XCTAssertLessThan(message.utf8.count, 5000)
        XCTAssertTrue(
            message.hasSuffix("... (an error message of \(25 + 20 << 20) bytes, cut to its first 4096)"),
            String(message.suffix(100)))
    }

    func testExecCutsAHugeErrorMessageAsRunDoes() throws {
        for (name, raise) in [
            ("string", #"error(string.rep("E", 20 << 20))"#),
            ("object", #"error(setmetatable({}, { __tostring = function() return string.rep("T", 20 << 20) end }))"#),
        ] {
            try write("loud.lua", raise + "\n")
            let result = try Moonflow.run(["exec", "--time-limit", "5000", "loud.lua"], in: scratch)
            XCTAssertEqual(result.status, 1, name)
            XCTAssertLessThan(
                result.stderr.utf8.count, 6000, "\(name): \(result.stderr.utf8.count) bytes on standard error")
            XCTAssertTrue(
                result.stderr.contains("... (an error message of "), "\(name): " + String(result.stderr.suffix(300)))
        }
    }

    func testAHundredMegabyteErrorMessageIsCutQuicklyWithinTheDefaultMemoryLimit() throws {
        try write(
            "plugins/loud/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "loud", initial = { n = 0 }, actions = { go = {}, bump = {} }, mutations = { bump = {} },
              handle = function(a)
                if a.type == "bump" then return { type = "bump" } end
                error(string.rep("E", 100 << 20))
              end,
              reduce = function(s) s.n = s.n + 1 return s end,
            }
            """)
        let started = Date()
        let result = try runJSONL("loud", [#"{"type":"go"}"#, #"{"type":"bump"}"#], [], timeout: 60)
        let elapsed = Date().timeIntervalSince(started)
        let message = try XCTUnwrap(jsonlErrors(result.stdout).first, result.stdout + result.stderr)
        XCTAssertTrue(
            message.hasSuffix("... (an error message of \(25 + 100 << 20) bytes, cut to its first 4096)"),
            String(message.suffix(100)))
        XCTAssertEqual(jsonlLastState(result.stdout)?["n"] as? Int, 1, "the run goes on")
        XCTAssertLessThan(elapsed, 10, "the message is cut, not copied around")
    }

    func testAHandlerStuckInAPatternMatchIsStoppedAndReported() throws {
        try write(
            "plugins/slow/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "slow", initial = { n = 0 }, actions = { go = {}, bump = {} }, mutations = { bump = {} },
              handle = function(a)
                if a.type == "go" then string.rep("a", 5000):find(".-.-.-.-b") end
                return { type = "bump" }
              end,
              reduce = function(s) s.n = s.n + 1 return s end,
            }
            """)
        try write("in.jsonl", "{\"type\":\"go\"}\n{\"type\":\"bump\"}\n")
        let result = try Moonflow.run(
            [
                "run", "plugins/slow", "--actions", "in.jsonl", "--format", "jsonl", "--clock", "virtual",
                "--time-limit", "200",
            ], in: scratch)
        XCTAssertEqual(result.status, 1)
        let events = jsonlObjects(result.stdout)
        let error = events.first { $0["event"] as? String == "error" }
        XCTAssertTrue((error?["message"] as? String)?.contains("time limit of 200 ms exceeded") == true, result.stdout)
        XCTAssertEqual((events.last?["state"] as? [String: Any])?["n"] as? Int, 1)
    }
}
