import Foundation
import XCTest

/// What a sandboxed plugin, which may come from someone the app does not trust, cannot
/// reach: shared tables and markers, the matcher, modules, files and links outside its folder,
/// its siblings' globals and their view of shared tables; `check` refuses the same.
final class SandboxEscapeTests: ScratchTestCase {
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
        let result = try runJSONL("escape", [#"{"type":"go"}"#], ["--sandbox"])
        let log = try XCTUnwrap(jsonlLastState(result.stdout)?["log"] as? String, result.stdout + result.stderr)
        for name in ["pairs", "next", "mf", "rawmf", "strmt"] {
            XCTAssertFalse(log.contains("\(name)=ok"), "\(name) escaped: \(log)")
        }
        XCTAssertTrue(log.hasSuffix("match=false,just=false"), log)

        // The same plugin under `moonflow test --sandbox` (a trusted state for the spec).
        try write(
            "plugins/escape/spec/escape_spec.lua",
            """
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
        try write(
            "plugins/reach/init.lua",
            """
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
        for command in [
            ["run", "plugins/reach", "--sandbox", "--actions", "in.jsonl", "--format", "jsonl", "--clock", "virtual"],
            ["check", "--sandbox", "plugins/reach"],
        ] {
            try write("in.jsonl", #"{"type":"go"}"# + "\n")
            let result = try Moonflow.run(command, in: scratch)
            let all = result.stdout + result.stderr
            XCTAssertFalse(all.contains(firstToken + ":"), "\(command[0]): /etc/passwd leaked: \(all)")
            XCTAssertFalse(all.contains("root:x:"), all)
            guard command[0] == "run" else { continue }
            let log = try XCTUnwrap(jsonlLastState(result.stdout)?["log"] as? String, all)
            let lines = log.split(separator: "\n")
            XCTAssertEqual(lines.count, 10, log)
            for line in lines { XCTAssertTrue(line.contains("=refused:"), "\(line) in\n\(log)") }
        }
    }

    func testAComposedChildCannotChangeWhatItsSiblingSeesInSharedTables() throws {
        try write(
            "plugins/poker/init.lua",
            """
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
        try write(
            "plugins/looker/init.lua",
            """
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
        try write(
            "plugins/family/init.lua",
            """
            local mf = require "moonflow"
            return mf.compose {
              name = "family",
              children = { a = "poker", b = "looker" },
              route = function(action) if action.type == "poke" then return "a", action end return "b", action end,
              combine = function(s) return { seen = s.b.seen } end,
            }
            """)
        let result = try runJSONL("family", [#"{"type":"poke"}"#, #"{"type":"look"}"#], ["--sandbox"])
        XCTAssertEqual(jsonlErrors(result.stdout), [], result.stdout)
        XCTAssertEqual(jsonlLastState(result.stdout)?["seen"] as? String, "X,ab,clean", result.stdout + result.stderr)
    }

    func testTheSharedArrayMarkerCannotBeReachedToChangeEveryonesArrays() throws {
        try write(
            "plugins/marker/init.lua",
            """
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
            let result = try runJSONL("marker", [#"{"type":"fail"}"#, #"{"type":"go"}"#], extra)
            let state = try XCTUnwrap(jsonlLastState(result.stdout), result.stdout + result.stderr)
            XCTAssertEqual(
                state["log"] as? String, "mt=string,poisoned=false,x=nil,write=true,set=false,remark=moonflow.object",
                "\(extra)")
            XCTAssertEqual(
                (state["items"] as? [Any])?.count, 0,
                "still an array after the rollback and the re-marks \(extra): \(result.stdout)")
            XCTAssertEqual(state["n"] as? Int, 1)
            XCTAssertEqual(jsonlErrors(result.stdout).count, 1, result.stdout)
        }
    }

    func testCheckSandboxRefusesTheSameEscapesAsRun() throws {
        // check reports no state: an escape that worked fails the plugin's top level instead.
        try write(
            "plugins/escape/init.lua",
            escapes.replacingOccurrences(
                of: "return mf.feature {",
                with: """
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
            try write(
                "plugins/db/init.lua",
                """
                local mf = require "moonflow"
                return mf.feature {
                  name = "db", initial = { n = 0 }, actions = { go = {} }, mutations = {},
                  repositories = { x = { sqlite = "\(file)" } },
                  handle = function() end, reduce = function(s) return s end,
                }
                """)
            let result = try runJSONL("db", [#"{"type":"go"}"#], ["--sandbox"])
            XCTAssertEqual(result.status, 1, file)
            let message = jsonlErrors(result.stdout).first ?? ""
            XCTAssertTrue(message.hasPrefix("plugins/db/init.lua: repositories.x.sqlite = "), message)
            XCTAssertTrue(message.contains("stay in its data folder"), message)
            XCTAssertFalse(FileManager.default.fileExists(atPath: outside), file)
        }
    }

    /// The sandbox's `require` resolves links: a module that links out of the plugin's folder
    /// (a `settings.lua` pointing at a `.env` elsewhere) is refused, by `run --sandbox` and by
    /// `replay` (sandboxed by default); one inside it, and a plugin folder that is itself a
    /// link, still load.
    func testASandboxedRequireRefusesALinkOutOfThePluginFolder() throws {
        try write("secret.lua", "TOKEN = 'hunter2'\nreturn { token = TOKEN }\n")
        try write("plugins/leaky/inside.lua", "return { ok = true }\n")
        try write(
            "plugins/leaky/init.lua",
            """
            local mf = require "moonflow"
            local inside = require "leaky.inside"
            local settings = require "leaky.settings"
            return mf.feature { name = "leaky", initial = { token = settings.token or "", ok = inside.ok },
              actions = {}, mutations = {}, handle = function() end, reduce = function(s) return s end }
            """)
        try FileManager.default.createSymbolicLink(
            atPath: scratch.appendingPathComponent("plugins/leaky/settings.lua").path,
            withDestinationPath: "../../secret.lua")
        let run = try Moonflow.run(
            ["run", "plugins/leaky", "--sandbox", "--clock", "virtual", "--format", "jsonl", "--actions", "-"],
            in: scratch, input: "")
        XCTAssertEqual(run.status, 1, run.stdout)
        XCTAssertFalse(run.stdout.contains("hunter2"), run.stdout)
        XCTAssertTrue(
            run.stdout.contains(
                "module 'leaky.settings' not found: plugins/leaky/settings.lua leads outside the plugin's folder"),
            run.stdout)
        // A link that stays inside loads.
        try FileManager.default.removeItem(atPath: scratch.appendingPathComponent("plugins/leaky/settings.lua").path)
        try FileManager.default.createSymbolicLink(
            atPath: scratch.appendingPathComponent("plugins/leaky/settings.lua").path,
            withDestinationPath: "inside.lua")
        let ok = try Moonflow.run(
            ["run", "plugins/leaky", "--sandbox", "--clock", "virtual", "--format", "jsonl", "--actions", "-"],
            in: scratch, input: "")
        XCTAssertEqual(ok.status, 0, ok.stdout)
    }

    /// A declared SQLite file (or its WAL file) that is a link to another app's database was
    /// opened and written under the sandbox; also with `--db DIR`. A file that links inside
    /// the folder still opens.
    func testASandboxedDatabaseFileThatLinksOutOfItsFolderIsRefused() throws {
        let other = scratch.appendingPathComponent("other.db").path
        try write(
            "plugins/db/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "db", initial = { n = 0 }, actions = { go = {} }, mutations = { got = {} },
              repositories = { x = { sqlite = "x.db" } },
              handle = function(a, s, env) env.services.x:put({ id = 1, v = "written" }) return { type = "got" } end,
              reduce = function(s) s.n = s.n + 1 return s end,
            }
            """)
        let fm = FileManager.default
        let cases: [(link: String, to: String, extra: [String])] = [
            ("plugins/db/x.db", "../../other.db", []),
            ("plugins/db/x.db-wal", "../../other.db", []),
            ("data/x.db", "../other.db", ["--db", "data"]),
        ]
        for (link, target, extra) in cases {
            try? fm.removeItem(atPath: other)
            try fm.createDirectory(at: scratch.appendingPathComponent("data"), withIntermediateDirectories: true)
            let linkPath = scratch.appendingPathComponent(link).path
            try fm.createSymbolicLink(atPath: linkPath, withDestinationPath: target)
            defer { try? fm.removeItem(atPath: linkPath) }
            let result = try runJSONL("db", [#"{"type":"go"}"#], ["--sandbox"] + extra)
            XCTAssertEqual(result.status, 1, "\(link): \(result.stdout)")
            let message = jsonlErrors(result.stdout).first ?? ""
            XCTAssertTrue(
                message.hasPrefix("plugins/db/init.lua: repositories.x.sqlite = \"x.db\": "), "\(link): \(message)")
            XCTAssertTrue(message.contains("leads outside the data folder"), "\(link): \(message)")
            XCTAssertFalse(fm.fileExists(atPath: other), "\(link): nothing written through the link")
        }
        // A link that stays in the folder opens (its target made as it opens).
        try fm.createSymbolicLink(
            atPath: scratch.appendingPathComponent("plugins/db/x.db").path, withDestinationPath: "real.db")
        let inside = try runJSONL("db", [#"{"type":"go"}"#], ["--sandbox"])
        XCTAssertEqual(inside.status, 0, inside.stdout)
        XCTAssertEqual(jsonlLastState(inside.stdout)?["n"] as? Int, 1, inside.stdout)
    }

    func testSandboxedRequireReadsOnlyTheScriptsOwnModules() throws {
        try write("secret.conf", "return 'SECRET'\n")
        try write("other/passwd.lua", "root:x:0:0\n")
        try write("app/util.lua", "return { ok = true }\n")
        try write(
            "app/main.lua",
            """
            print(pcall(function() package.path = "../?.conf;../other/?.lua"; return require "secret" end))
            print(pcall(require, "passwd"))
            print(package.searchpath, package.path)
            print(pcall(setmetatable, _G, {}))
            print(require("util").ok, type(require "moonflow"))
            """)
        let result = try Moonflow.run(["exec", "--sandbox", "app/main.lua"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stdout.components(separatedBy: "\n")
        XCTAssertTrue(lines[0].hasPrefix("false\tapp/main.lua:1: module 'secret' not found:"), result.stdout)
        XCTAssertFalse(
            result.stdout.contains("SECRET") || result.stdout.contains("root:x")
                || result.stdout.contains("passwd.lua:"), result.stdout)
        XCTAssertTrue(result.stdout.contains("\tno file 'app/secret.lua'"), result.stdout)
        XCTAssertTrue(result.stdout.contains("\nnil\t../?.conf"), "no searchpath to probe files with: \(result.stdout)")
        XCTAssertTrue(
            result.stdout.contains("false\tsetmetatable: the sandbox's globals cannot get a metatable"), result.stdout)
        XCTAssertTrue(result.stdout.hasSuffix("true\ttable\n"), result.stdout)
    }

    func testASandboxedChildCannotChangeItsSiblingsGlobals() throws {
        try write(
            "plugins/bully/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "bully", initial = { done = false }, actions = { go = {} }, mutations = { done = {} },
              handle = function()
                tostring = function() return "hacked" end
                rawset(_G, "string", { upper = function() return "hacked" end })
                print(pcall(setmetatable, _G, { __index = function() return "hacked" end }))
                return { type = "done" }
              end,
              reduce = function(s) s.done = true return s end,
            }
            """)
        try write(
            "plugins/victim/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "victim", initial = { text = "" }, actions = { go = {} }, mutations = { set = { text = "string" } },
              handle = function() return { type = "set", text = string.upper("ok") .. tostring(1) } end,
              reduce = function(s, m) s.text = m.text return s end,
            }
            """)
        try write(
            "plugins/pair/init.lua",
            """
            local mf = require "moonflow"
            return mf.compose {
              name = "pair", children = { bully = "bully", victim = "victim" },
              route = function(a) return a.to, { type = "go" } end,
              combine = function(s) return { done = s.bully.done, text = s.victim.text } end,
            }
            """)
        try write("in.jsonl", "{\"type\":\"go\",\"to\":\"bully\"}\n{\"type\":\"go\",\"to\":\"victim\"}\n")
        let result = try Moonflow.run(
            ["run", "plugins/pair", "--sandbox", "--actions", "in.jsonl", "--format", "jsonl", "--clock", "virtual"],
            in: scratch)
        let events = jsonlObjects(result.stdout)
        let state = events.last?["state"] as? [String: Any]
        XCTAssertEqual(state?["done"] as? Bool, true, result.stdout)
        XCTAssertEqual(
            state?["text"] as? String, "OK1", "the sibling's string.upper and tostring are untouched: \(result.stdout)")
        XCTAssertTrue(
            result.stdout.contains("setmetatable: a sandboxed plugin's globals cannot get a metatable"), result.stdout)
        XCTAssertTrue(
            result.stdout.contains(#""where":"plugins/bully/init.lua:7""#),
            "print names the plugin's line: \(result.stdout)")
    }
}
