import Foundation
import XCTest

/// The second round of hostile scripts and input: huge times, sandbox escapes,
/// code that hooks cannot reach, views kept or written raw, infinity.
final class HostileRoundTwoTests: ScratchTestCase {
    private func events(_ stdout: String) -> [[String: Any]] {
        stdout.split(separator: "\n").compactMap { line in
            try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }
    }

    private func errors(_ stdout: String) -> [String] {
        events(stdout).filter { $0["event"] as? String == "error" }.compactMap { $0["message"] as? String }
    }

    private func lastState(_ stdout: String) -> [String: Any]? {
        events(stdout).last { $0["event"] as? String == "state" }?["state"] as? [String: Any]
    }

    /// Runs plugins/NAME on the virtual clock with `lines` as input, in jsonl.
    private func run(_ name: String, _ lines: [String], _ extra: [String] = [], timeout: TimeInterval = 60) throws -> Moonflow.Result {
        try write("in.jsonl", lines.joined(separator: "\n") + "\n")
        return try Moonflow.run(["run", "plugins/\(name)", "--actions", "in.jsonl", "--format", "jsonl", "--clock", "virtual"] + extra,
                                in: scratch, timeout: timeout)
    }

    // MARK: - Huge numbers from outside

    func testHugeTimesAndDelaysDoNotOverflowTheClock() throws {
        try write("plugins/late/init.lua", """
            local mf = require "moonflow"
            return mf.feature {
              name = "late", initial = { n = 0 }, actions = { wait = { ms = "integer" }, bump = {} }, mutations = { bump = {} },
              handle = function(a)
                if a.type == "bump" then return { type = "bump" } end
                if a.ms < 0 then return mf.interval(-a.ms):map(function() return { type = "bump" } end) end
                return mf.timer(a.ms, { type = "bump" })
              end,
              reduce = function(s) s.n = s.n + 1 return s end,
            }
            """)
        let result = try run("late", [
            #"{"send":{"type":"wait","ms":9223372036854775807},"at":5}"#,
            #"{"at":9223372036854775800,"send":{"type":"wait","ms":100}}"#,
            #"{"at":9223372036854775806,"send":{"type":"wait","ms":-3}}"#,
            #"{"at":9223372036854775807,"send":{"type":"bump"}}"#,
        ])
        XCTAssertFalse(result.stderr.contains("overflow"), result.stderr)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(lastState(result.stdout)?["n"] as? Int, 4, "the bump, the two timers due at the end of time, one tick: \(result.stdout)")

        // A recording whose times are at the end of Int replays without a trap.
        try write("rec.jsonl", """
            {"record":"moonflow-session","format":1,"feature":"late","version":1,"path":"plugins/late","clock":"virtual"}
            {"input":{"type":"wait","ms":5},"t":9223372036854775807}
            """)
        let replay = try Moonflow.run(["replay", "rec.jsonl"], in: scratch)
        XCTAssertFalse(replay.stderr.contains("overflow"), replay.stderr)
        XCTAssertTrue([0, 1].contains(replay.status), "compared, not crashed: \(replay.status) \(replay.stderr)")
    }

    func testARecordedInputWithANegativeTimeIsRefused() throws {
        try write("plugins/late/init.lua", "return require('moonflow').feature { name = 'late', initial = {}, actions = { go = {} }, mutations = {}, handle = function() end, reduce = function(s) return s end }\n")
        try write("rec.jsonl", """
            {"record":"moonflow-session","format":1,"feature":"late","version":1,"path":"plugins/late","clock":"virtual"}
            {"input":{"type":"go"},"t":-5}
            """)
        let replay = try Moonflow.run(["replay", "rec.jsonl"], in: scratch)
        XCTAssertEqual(replay.status, 2)
        XCTAssertTrue(replay.stderr.contains("rec.jsonl:2: an input line needs its time \"t\" in ms (an integer, 0 or more)"), replay.stderr)
    }

    // MARK: - The host owns the process

    func testOsExitAtAPluginsTopLevelEndsNeitherCheckNorReplay() throws {
        try write("plugins/quit/init.lua", """
            local mf = require "moonflow"
            os.exit(0)
            return mf.feature {
              name = "quit", initial = { n = 0 }, actions = { go = {} }, mutations = {},
              handle = function() end, reduce = function(s) return s end,
            }
            """)
        let check = try Moonflow.run(["check", "plugins/quit"], in: scratch)
        XCTAssertEqual(check.status, 1, check.stdout + check.stderr)
        XCTAssertTrue((check.stdout + check.stderr).contains("os.exit is not available under moonflow check"), check.stdout + check.stderr)

        try write("rec.jsonl", """
            {"record":"moonflow-session","format":1,"feature":"quit","version":1,"path":"plugins/quit","clock":"virtual"}
            {"event":"state","t":0,"seq":0,"state":{"n":0}}
            {"input":{"type":"go"},"t":0}
            """)
        let replay = try Moonflow.run(["replay", "rec.jsonl"], in: scratch)
        XCTAssertNotEqual(replay.status, 0, "a plugin that cannot load does not replay as identical: \(replay.stdout)")
        XCTAssertFalse(replay.stdout.contains("identical"), replay.stdout)
    }

    // MARK: - The sandbox

    private let escapes = """
        local mf = require "moonflow"
        local out = {}
        local function try(name, f) local ok, e = pcall(f) out[#out + 1] = name .. "=" .. (ok and "ok" or tostring(e)) end
        try("pairs", function() local _, a = pairs(string); local _, real = pairs(a); rawset(real, "match", print) end)
        try("next", function() local f, t = pairs(string); rawset(t, "gsub", print) end)
        try("mf", function() mf.just = print end)
        try("rawmf", function() rawset(mf, "just", print) end)
        try("strmt", function() local mt = getmetatable(""); mt.__index.rep = print end)
        out[#out + 1] = "match=" .. tostring(string.match == print) .. ",just=" .. tostring(mf.just == print)
        return mf.feature {
          name = "escape", initial = { log = table.concat(out, "|") }, actions = { go = {} }, mutations = {},
          handle = function() end, reduce = function(s) return s end,
        }
        """

    func testReadOnlyTablesHandOutNoBackingTableUnderRunAndTest() throws {
        try write("plugins/escape/init.lua", escapes)
        let result = try run("escape", [#"{"type":"go"}"#], ["--sandbox"])
        let log = try XCTUnwrap(lastState(result.stdout)?["log"] as? String, result.stdout + result.stderr)
        for name in ["pairs", "next", "mf", "rawmf", "strmt"] {
            XCTAssertFalse(log.contains("\(name)=ok"), "\(name) escaped: \(log)")
        }
        XCTAssertTrue(log.hasSuffix("match=false,just=false"), log)

        // The same plugin under `moonflow test --sandbox` (a trusted state for the spec).
        try write("plugins/escape/spec/escape_spec.lua", """
            local test = require "moonflow.test"
            describe("escape", function()
              it("is held", function()
                local store = test.store("plugins/escape")
                print("LOG " .. store.state.log)
                assert.equal("function", type(string.match))
                assert.is_true(string.match ~= print)
              end)
            end)
            """)
        let spec = try Moonflow.run(["test", "--sandbox", "plugins/escape"], in: scratch)
        XCTAssertEqual(spec.status, 0, spec.stdout + spec.stderr)
        let line = try XCTUnwrap(spec.stdout.split(separator: "\n").first { $0.contains("LOG ") }, spec.stdout)
        for name in ["pairs", "next", "mf", "rawmf", "strmt"] {
            XCTAssertFalse(line.contains("\(name)=ok"), "\(name) escaped under test --sandbox: \(line)")
        }
    }

    func testASandboxedPluginCannotSwapTheMatcherToRequireAFileOutsideItsFolder() throws {
        try write("plugins/reach/init.lua", """
            local mf = require "moonflow"
            local out = {}
            local function note(name, ok, e) out[#out + 1] = name .. "=" .. (ok and "ok" or "refused") .. ":" .. tostring(e) end
            -- What the sandbox's require calls, swapped by every route a script has.
            local fake = function() return "../../../../../../etc/passwd" end
            note("pairs", pcall(function() local _, a = pairs(string) local _, real = pairs(a) rawset(real, "match", fake) rawset(real, "gsub", fake) end))
            note("next", pcall(function() local f, t = pairs(string) rawset(t, "match", fake) end))
            note("assign", pcall(function() string.match = fake string.gsub = fake end))
            note("strmt", pcall(function() getmetatable("").__index.match = fake end))
            for _, path in ipairs { "../../../../../../etc/passwd", "/etc/passwd", "reach./../../../../../etc/passwd",
                                    "reach.x\\0", "/etc/passwd\\0", "reach.../../../../etc/passwd\\0" } do
              note("require", pcall(require, path))
            end
            return mf.feature {
              name = "reach", initial = { log = table.concat(out, "\\n") }, actions = { go = {} }, mutations = {},
              handle = function() end, reduce = function(s) return s end,
            }
            """)
        let passwd = (try? String(contentsOfFile: "/etc/passwd", encoding: .utf8)) ?? "root:x:0:0:"
        let firstToken = String(passwd.split(separator: ":").first ?? "root")
        for command in [["run", "plugins/reach", "--sandbox", "--actions", "in.jsonl", "--format", "jsonl", "--clock", "virtual"],
                        ["check", "--sandbox", "plugins/reach"]] {
            try write("in.jsonl", #"{"type":"go"}"# + "\n")
            let result = try Moonflow.run(command, in: scratch)
            let all = result.stdout + result.stderr
            XCTAssertFalse(all.contains(firstToken + ":"), "\(command[0]): /etc/passwd leaked: \(all)")
            XCTAssertFalse(all.contains("root:x:"), all)
            guard command[0] == "run" else { continue }
            let log = try XCTUnwrap(lastState(result.stdout)?["log"] as? String, all)
            let lines = log.split(separator: "\n")
            XCTAssertEqual(lines.count, 10, log)
            for line in lines { XCTAssertTrue(line.contains("=refused:"), "\(line) in\n\(log)") }
        }
    }

    func testAComposedChildCannotChangeWhatItsSiblingSeesInSharedTables() throws {
        try write("plugins/poker/init.lua", """
            local mf = require "moonflow"
            local function poke()
              local fake = function() return "HACKED" end
              pcall(function() local _, a = pairs(string) local _, real = pairs(a) rawset(real, "upper", fake) end)
              pcall(function() local f, t = pairs(string) rawset(t, "upper", fake) end)
              pcall(function() local f, t = pairs(table) rawset(t, "concat", fake) end)
              pcall(function() local f, t = pairs(mf) rawset(t, "just", fake) end)
              pcall(function() local _, a = pairs(mf) local _, real = pairs(a) rawset(real, "just", fake) end)
              pcall(function() for k, v in next, string do rawset(string, k, fake) end end)
              pcall(function() getmetatable("").__index.upper = fake end)
              pcall(function() mf.just = fake end)
            end
            poke()
            return mf.feature {
              name = "poker", initial = {}, actions = { poke = {} }, mutations = {},
              handle = function() poke() end, reduce = function(s) return s end,
            }
            """)
        try write("plugins/looker/init.lua", """
            local mf = require "moonflow"
            local function look()
              local names = {}
              for k, v in pairs(string) do if v == "HACKED" or (type(v) == "function" and pcall(v, "a") and v("a") == "HACKED") then names[#names + 1] = k end end
              for k, v in pairs(mf) do if v == "HACKED" or (k == "just" and v(1) == "HACKED") then names[#names + 1] = "mf." .. k end end
              local f, s, k = pairs(table)
              while true do
                local v
                k, v = f(s, k)
                if k == nil then break end
                if k == "concat" and v({ "x" }) ~= "x" then names[#names + 1] = "table.concat" end
              end
              return string.upper("x") .. "," .. table.concat({ "a", "b" }) .. "," .. (#names == 0 and "clean" or table.concat(names, " "))
            end
            return mf.feature {
              name = "looker", initial = { seen = "" }, actions = { look = {} }, mutations = { saw = { seen = "string" } },
              handle = function() return { type = "saw", seen = look() } end,
              reduce = function(s, m) s.seen = m.seen return s end,
            }
            """)
        try write("plugins/family/init.lua", """
            local mf = require "moonflow"
            return mf.compose {
              name = "family",
              children = { a = "poker", b = "looker" },
              route = function(action) if action.type == "poke" then return "a", action end return "b", action end,
              combine = function(s) return { seen = s.b.seen } end,
            }
            """)
        let result = try run("family", [#"{"type":"poke"}"#, #"{"type":"look"}"#], ["--sandbox"])
        XCTAssertEqual(errors(result.stdout), [], result.stdout)
        XCTAssertEqual(lastState(result.stdout)?["seen"] as? String, "X,ab,clean", result.stdout + result.stderr)
    }

    func testTheSharedArrayMarkerCannotBeReachedToChangeEveryonesArrays() throws {
        try write("plugins/marker/init.lua", """
            local mf = require "moonflow"
            local out = {}
            local mt = getmetatable(mf.array())
            out[#out + 1] = "mt=" .. type(mt)
            local ok = pcall(function()
              mt.__index = function() return "hacked" end
              mt.__newindex = function() error("no writes") end
            end)
            out[#out + 1] = "poisoned=" .. tostring(ok)
            local a = mf.array()
            out[#out + 1] = "x=" .. tostring(a.x)
            out[#out + 1] = "write=" .. tostring(pcall(function() a[1] = 1 end))
            out[#out + 1] = "set=" .. tostring(pcall(setmetatable, mf.array(), {}))
            -- The markers still mark: again, the other way, and as reduce rolls back.
            local o = mf.object(mf.array({}))
            out[#out + 1] = "remark=" .. tostring(getmetatable(o))
            return mf.feature {
              name = "marker", initial = { log = table.concat(out, ","), items = mf.array(), n = 0 },
              actions = { go = {}, fail = {} }, mutations = { go = {}, fail = {} },
              handle = function(a) return { type = a.type } end,
              reduce = function(s, m)
                mf.object(s.items)
                s.n = s.n + 1
                if m.type == "fail" then error("rolled back") end
                mf.array(s.items)
                return s
              end,
            }
            """)
        for extra in [[], ["--sandbox"]] {
            let result = try run("marker", [#"{"type":"fail"}"#, #"{"type":"go"}"#], extra)
            let state = try XCTUnwrap(lastState(result.stdout), result.stdout + result.stderr)
            XCTAssertEqual(state["log"] as? String, "mt=string,poisoned=false,x=nil,write=true,set=false,remark=moonflow.object", "\(extra)")
            XCTAssertEqual((state["items"] as? [Any])?.count, 0, "still an array after the rollback and the re-marks \(extra): \(result.stdout)")
            XCTAssertEqual(state["n"] as? Int, 1)
            XCTAssertEqual(errors(result.stdout).count, 1, result.stdout)
        }
    }

    func testCheckSandboxRefusesTheSameEscapesAsRun() throws {
        // check reports no state: an escape that worked fails the plugin's top level instead.
        try write("plugins/escape/init.lua", escapes.replacingOccurrences(of: "return mf.feature {", with: """
            if table.concat(out, "|"):find("=ok") or string.match == print or mf.just == print then error("ESCAPED " .. table.concat(out, "|")) end
            return mf.feature {
            """))
        let check = try Moonflow.run(["check", "--sandbox", "plugins/escape"], in: scratch)
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr)
        XCTAssertFalse((check.stdout + check.stderr).contains("ESCAPED"), check.stdout + check.stderr)
        // The same file does escape where nothing is sandboxed, so the probe can tell.
        let trusted = try Moonflow.run(["check", "plugins/escape"], in: scratch)
        XCTAssertEqual(trusted.status, 1, trusted.stdout + trusted.stderr)
        XCTAssertTrue((trusted.stdout + trusted.stderr).contains("ESCAPED"), trusted.stdout + trusted.stderr)
    }

    func testASandboxedPluginsDatabaseFilesStayInItsFolder() throws {
        let outside = scratch.appendingPathComponent("outside.db").path
        for file in [outside, "../outside.db", "data/../../outside.db", "file:outside.db"] {
            try write("plugins/db/init.lua", """
                local mf = require "moonflow"
                return mf.feature {
                  name = "db", initial = { n = 0 }, actions = { go = {} }, mutations = {},
                  repositories = { x = { sqlite = "\(file)" } },
                  handle = function() end, reduce = function(s) return s end,
                }
                """)
            let result = try run("db", [#"{"type":"go"}"#], ["--sandbox"])
            XCTAssertEqual(result.status, 1, file)
            let message = errors(result.stdout).first ?? ""
            XCTAssertTrue(message.hasPrefix("plugins/db/init.lua: repositories.x.sqlite = "), message)
            XCTAssertTrue(message.contains("stay in its data folder"), message)
            XCTAssertFalse(FileManager.default.fileExists(atPath: outside), file)
        }
    }

    // MARK: - Code that hooks do not reach

    /// Loops in places Lua runs with hooks off, or inside one long C call; `debug`
    /// and `__gc` ones need the trusted profile.
    private static let hooklessLoops: [(kind: String, code: String, trustedOnly: Bool)] = [
        ("xpcall", "xpcall(function() while true do end end, function() while true do end end)", false),
        ("handler", "xpcall(error, function() while true do end end, 'x')", false),
        ("close", """
            local co = coroutine.create(function()
              local x <close> = setmetatable({}, { __close = function() while true do end end })
              coroutine.yield()
            end)
            coroutine.resume(co)
            coroutine.close(co)
            """, false),
        ("gc", "setmetatable({}, { __gc = function() while true do end end }); collectgarbage()", true),  // the sandbox refuses __gc
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
            try write("plugins/hang/init.lua", """
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
            let result = try run("hang", lines, ["--time-limit", "200"] + (sandbox ? ["--sandbox"] : []))
            XCTAssertEqual(result.status, 1, result.stderr)
            let stopped = errors(result.stdout).filter { $0.contains("time limit of 200 ms exceeded") }
            XCTAssertEqual(stopped.count, loops.count, "sandbox: \(sandbox)\n" + result.stdout)
            XCTAssertEqual(lastState(result.stdout)?["n"] as? Int, loops.count, "every bump after a stop ran (sandbox: \(sandbox))")
        }
    }

    func testLoopsWhereHooksAreOffAreStoppedUnderExec() throws {
        for sandbox in [false, true] {
            for loop in Self.hooklessLoops where !sandbox || !loop.trustedOnly {
                try write("loop.lua", loop.code + "\nprint('not reached')\n")
                let result = try Moonflow.run(["exec", "--time-limit", "200"] + (sandbox ? ["--sandbox"] : []) + ["loop.lua"], in: scratch)
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
        try write("plugins/hang/init.lua", "return require('moonflow').feature { name = 'hang', initial = {}, actions = {}, mutations = {}, handle = function() end, reduce = function(s) return s end }\n")
        try write("plugins/hang/spec/hang_spec.lua", "describe(\"loops\", function()\n\(branches)\n  it(\"runs after\", function() end)\nend)\n")
        let result = try Moonflow.run(["test", "--time-limit", "20", "plugins/hang"], in: scratch)
        XCTAssertEqual(result.status, 1, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("\(Self.hooklessLoops.count) failed"), result.stdout)
        XCTAssertTrue(result.stdout.contains("1 passed"), result.stdout)
    }

    func testAHugeErrorMessageIsCutWithItsSizeSaid() throws {
        try write("plugins/loud/init.lua", """
            local mf = require "moonflow"
            return mf.feature {
              name = "loud", initial = { n = 0 }, actions = { go = {} }, mutations = {},
              handle = function() error(string.rep("E", 20 << 20)) end, reduce = function(s) return s end,
            }
            """)
        let result = try run("loud", [#"{"type":"go"}"#], ["--time-limit", "5000"])
        let message = try XCTUnwrap(errors(result.stdout).first, result.stdout)
        XCTAssertLessThan(message.utf8.count, 5000)
        XCTAssertTrue(message.hasSuffix("... (an error message of \(25 + 20 << 20) bytes, cut to its first 4096)"), String(message.suffix(100)))
    }

    func testExecCutsAHugeErrorMessageAsRunDoes() throws {
        for (name, raise) in [("string", #"error(string.rep("E", 20 << 20))"#),
                              ("object", #"error(setmetatable({}, { __tostring = function() return string.rep("T", 20 << 20) end }))"#)] {
            try write("loud.lua", raise + "\n")
            let result = try Moonflow.run(["exec", "--time-limit", "5000", "loud.lua"], in: scratch)
            XCTAssertEqual(result.status, 1, name)
            XCTAssertLessThan(result.stderr.utf8.count, 6000, "\(name): \(result.stderr.utf8.count) bytes on standard error")
            XCTAssertTrue(result.stderr.contains("... (an error message of "), "\(name): " + String(result.stderr.suffix(300)))
        }
    }

    func testAHundredMegabyteErrorMessageIsCutQuicklyWithinTheDefaultMemoryLimit() throws {
        try write("plugins/loud/init.lua", """
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
        let result = try run("loud", [#"{"type":"go"}"#, #"{"type":"bump"}"#], [], timeout: 60)
        let elapsed = Date().timeIntervalSince(started)
        let message = try XCTUnwrap(errors(result.stdout).first, result.stdout + result.stderr)
        XCTAssertTrue(message.hasSuffix("... (an error message of \(25 + 100 << 20) bytes, cut to its first 4096)"), String(message.suffix(100)))
        XCTAssertEqual(lastState(result.stdout)?["n"] as? Int, 1, "the run goes on")
        XCTAssertLessThan(elapsed, 10, "the message is cut, not copied around")
    }

    func testAFinalizerThatLoopsAtExitDoesNotHoldTheProcess() throws {
        try write("plugins/late/init.lua", """
            local mf = require "moonflow"
            KEEP = setmetatable({}, { __gc = function() while true do end end })
            return mf.feature {
              name = "late", initial = { n = 0 }, actions = { go = {} }, mutations = {},
              handle = function() end, reduce = function(s) return s end,
            }
            """)
        let result = try run("late", [#"{"type":"go"}"#], ["--time-limit", "200"])
        XCTAssertEqual(result.status, 0, result.stderr)
    }

    // MARK: - The last resort: a call no hook reaches

    /// A plugin whose `block` action calls a C function that blocks (os.execute, trusted
    /// profile) for longer than the watchdog waits: nothing inside Lua can stop it.
    private func writeBlockingPlugin() throws {
        try write("plugins/blocking/init.lua", """
            local mf = require "moonflow"
            return mf.feature {
              name = "blocking", initial = { count = 0 },
              actions = { bump = {}, block = {} }, mutations = { bump = {} },
              handle = function(a)
                if a.type == "block" then os.execute("exec sleep 6 </dev/null >/dev/null 2>&1") end
                return { type = "bump" }
              end,
              reduce = function(s) s.count = s.count + 1 return s end,
            }
            """)
    }

    func testAStuckCallIsLeftBehindAndTheFeatureRebuiltWithItsLastStateOnEitherClock() throws {
        try writeBlockingPlugin()
        let lines = [#"{"type":"bump"}"#, #"{"type":"bump"}"#, #"{"type":"block"}"#, #"{"type":"bump"}"#, #"{"type":"bump"}"#]
        for clock in ["virtual", "real"] {
            try write("in.jsonl", lines.joined(separator: "\n") + "\n")
            let result = try Moonflow.run(["run", "plugins/blocking", "--actions", "in.jsonl", "--format", "jsonl",
                                           "--clock", clock, "--time-limit", "200"], in: scratch, timeout: 30)
            XCTAssertEqual(result.status, 1, "the stuck call is an error of the run (\(clock)): \(result.stderr)")
            let stuck = errors(result.stdout).filter { $0.contains("cannot be interrupted") }
            XCTAssertEqual(stuck.count, 1, "one report of the stuck call (\(clock)): \(result.stdout)")
            XCTAssertTrue(stuck.first?.contains("loaded again from plugins/blocking with its last state") == true, stuck.first ?? "")
            XCTAssertEqual(lastState(result.stdout)?["count"] as? Int, 4,
                           "the two bumps before kept, the two after counted by the rebuilt feature (\(clock)): \(result.stdout)")
            if clock == "real" {
                // (The harness itself waits for the blocking child process, which outlives the run.)
                let lastT = events(result.stdout).last?["t"] as? Int ?? .max
                XCTAssertLessThan(lastT, 5000, "the run went on without waiting for the blocking call to end: \(result.stdout)")
            }
        }
    }

    func testARebuildThatBlocksAsItLoadsEndsTheRun() throws {
        // The first load passes (the marker file is absent); the rebuild finds it and blocks too.
        try write("plugins/blockload/init.lua", """
            local mf = require "moonflow"
            local f = io.open("rebuilt", "r")
            if f then f:close() os.execute("exec sleep 6 </dev/null >/dev/null 2>&1") end
            return mf.feature {
              name = "blockload", initial = { n = 0 }, actions = { block = {} }, mutations = {},
              handle = function() io.open("rebuilt", "w"):close() os.execute("exec sleep 6 </dev/null >/dev/null 2>&1") end,
              reduce = function(s) return s end,
            }
            """)
        let result = try run("blockload", [#"{"type":"block"}"#, #"{"type":"block"}"#], ["--time-limit", "200"], timeout: 30)
        XCTAssertEqual(result.status, 1, result.stderr)
        XCTAssertTrue(errors(result.stdout).contains { $0.contains("loading plugins/blockload again got stuck as well") }, result.stdout)
    }

    func testATestStuckInABlockingCallFailsAndTheTestsAfterItRunInAFreshState() throws {
        try writeBlockingPlugin()
        try write("plugins/blocking/spec/blocking_spec.lua", """
            local test = require "moonflow.test"
            describe("blocking", function()
              it("counts before", function()
                test.store("blocking"):send({ type = "bump" }, function(s) s.count = 1 end)
              end)
              it("blocks", function()
                test.store("blocking"):send { type = "block" }
              end)
              it("counts after", function()
                test.store("blocking"):send({ type = "bump" }, function(s) s.count = 1 end)
              end)
            end)
            """)
        let result = try Moonflow.run(["test", "--time-limit", "200", "plugins/blocking/spec"], in: scratch, timeout: 30)
        let fileMs = result.stdout.firstMatch(of: /blocking_spec\.lua  2 passed, 1 failed  \((\d+) ms\)/).flatMap { Int($0.1) } ?? .max
        XCTAssertLessThan(fileMs, 5000, "the runner did not wait for the blocking call: \(result.stdout)")
        XCTAssertEqual(result.status, 1, result.stdout)
        XCTAssertTrue(result.stdout.contains("ERROR blocking blocks\n  stuck in a call that ran on past the time limit (200 ms)"), result.stdout)
        XCTAssertTrue(result.stdout.contains("at plugins/blocking/spec/blocking_spec.lua:6"), result.stdout)
        XCTAssertTrue(result.stdout.contains("✓ blocking counts after"), "the test after it ran in a fresh state: \(result.stdout)")
        XCTAssertTrue(result.stdout.hasSuffix("2 passed, 1 failed\n"), result.stdout)
    }

    func testExecEndsWithAMessageWhenTheScriptIsStuckInABlockingCall() throws {
        try write("blocks.lua", """
            print("before")
            os.execute("exec sleep 6 </dev/null >/dev/null 2>&1")
            print("after")
            """)
        let result = try Moonflow.run(["exec", "--time-limit", "200", "blocks.lua"], in: scratch, timeout: 30)
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(result.stdout, "before\n", "the script's thread is left behind: nothing after the blocking call runs")
        XCTAssertEqual(result.stderr, "moonflow: a call ran on past the time limit of 200 ms in code that cannot be interrupted (a blocking C or Swift function, such as os.execute or io.read); the program ends without waiting for it\n")
    }

    // MARK: - State views

    func testRawAccessToAViewIsRefusedAndLeavesTheStateWhole() throws {
        try write("plugins/raw/init.lua", """
            local mf = require "moonflow"
            return mf.feature {
              name = "raw", initial = { count = 0 }, actions = { raw = {}, rawh = {}, inc = {} }, mutations = { raw = {}, inc = {} },
              handle = function(a, s)
                if a.type == "rawh" then return { type = "inc", n = rawget(s, "count") } end
                return { type = a.type }
              end,
              reduce = function(s, m)
                if m.type == "raw" then rawset(s, "count", 1000) end
                s.count = s.count + 1
                return s
              end,
            }
            """)
        // Under the sandbox too, whose definition takes its raw functions before the host
        // has made a single view.
        for extra in [[], ["--sandbox"]] {
            let result = try run("raw", [#"{"type":"raw"}"#, #"{"type":"inc"}"#, #"{"type":"rawh"}"#, #"{"type":"inc"}"#], extra)
            let messages = errors(result.stdout)
            XCTAssertEqual(messages.count, 2, "\(extra): \(result.stdout)")
            XCTAssertTrue(messages.first?.contains("rawset on count: the state is a view, not a plain table") == true, "\(extra): \(messages)")
            XCTAssertTrue(messages.last?.contains("rawget on state.count: the state is a view") == true, "\(extra): \(messages)")
            XCTAssertEqual(lastState(result.stdout)?["count"] as? Int, 2, "both incs counted, the raw write rolled back \(extra)")
        }
    }

    func testAViewKeptPastItsCallFailsNamingTheField() throws {
        try write("plugins/kept/init.lua", """
            local mf = require "moonflow"
            local KEPT, SEEN
            return mf.feature {
              name = "kept", initial = { count = 0 }, actions = { keep = {}, poke = {}, look = {}, peek = {} }, mutations = { keep = {}, peek = {} },
              handle = function(a, s)
                if a.type == "poke" then KEPT.count = 777 return end
                if a.type == "look" then SEEN = s return end
                return { type = a.type }
              end,
              reduce = function(s, m)
                if m.type == "keep" then KEPT = s end
                if m.type == "peek" then s.count = SEEN.count + 1 end
                return s
              end,
            }
            """)
        let result = try run("kept", [#"{"type":"keep"}"#, #"{"type":"poke"}"#, #"{"type":"look"}"#, #"{"type":"peek"}"#])
        let messages = errors(result.stdout)
        XCTAssertEqual(messages.count, 2, result.stdout)
        XCTAssertTrue(messages.first?.contains("count: this view of the state was kept after its reduce call returned") == true, messages.description)
        XCTAssertTrue(messages.last?.contains("state.count: this view of the state was kept after its handle call returned") == true, messages.description)
        XCTAssertEqual(lastState(result.stdout)?["count"] as? Int, 0, "nothing written through a kept view")
    }

    func testAViewKeptFromOneHandleFailsInTheNextNamingTheField() throws {
        try write("plugins/later/init.lua", """
            local mf = require "moonflow"
            local SEEN, ITEMS
            return mf.feature {
              name = "later", initial = { count = 3, items = { 10, 20 } },
              actions = { keep = {}, read = {}, len = {}, walk = {}, item = {}, fresh = {} }, mutations = { saw = { n = "integer" } },
              handle = function(a, s)
                if a.type == "keep" then SEEN, ITEMS = s, s.items return end
                if a.type == "read" then return { type = "saw", n = SEEN.count } end
                if a.type == "len" then return { type = "saw", n = #ITEMS } end
                if a.type == "walk" then for k in pairs(SEEN) do end return end
                if a.type == "item" then return { type = "saw", n = ITEMS[1] } end
                return { type = "saw", n = s.count + #s.items }
              end,
              reduce = function(s, m) s.count = m.n return s end,
            }
            """)
        let result = try run("later", ["keep", "read", "len", "walk", "item", "fresh"].map { #"{"type":"\#($0)"}"# })
        let messages = errors(result.stdout)
        XCTAssertEqual(messages.count, 4, result.stdout)
        for (message, field) in zip(messages, ["state.count", "state.items", "state", "state.items[1]"]) {
            XCTAssertTrue(message.contains("\(field): this view of the state was kept after its handle call returned"), "\(field): \(message)")
        }
        XCTAssertEqual(lastState(result.stdout)?["count"] as? Int, 5, "a fresh view in a later call reads as usual")
    }

    func testInfinityIsRefusedLikeNaNWithRollback() throws {
        try write("plugins/inf/init.lua", """
            local mf = require "moonflow"
            return mf.feature {
              name = "inf", initial = { x = 1 }, actions = { up = {}, down = {}, ok = {} }, mutations = { set = { x = "number" }, down = {} },
              handle = function(a)
                if a.type == "up" then return { type = "set", x = math.huge } end
                if a.type == "down" then return { type = "down" } end
                return { type = "set", x = 2.5 }
              end,
              reduce = function(s, m)
                if m.type == "down" then s.x = -math.huge else s.x = m.x end
                return s
              end,
            }
            """)
        let result = try run("inf", [#"{"type":"up"}"#, #"{"type":"down"}"#, #"{"type":"ok"}"#])
        XCTAssertEqual(result.status, 1)
        let messages = errors(result.stdout)
        XCTAssertEqual(messages.count, 2, result.stdout)
        XCTAssertTrue(messages.first?.contains("infinity (math.huge) cannot be copied out of Lua") == true, messages.description)
        XCTAssertTrue(messages.last?.contains("-infinity (math.huge) cannot be copied out of Lua") == true, messages.description)
        XCTAssertEqual(lastState(result.stdout)?["x"] as? Double, 2.5)
        let xs = events(result.stdout).compactMap { ($0["state"] as? [String: Any])?["x"] as? Double }
        XCTAssertEqual(xs, [1, 2.5], "no state holds an infinity")
    }
}
