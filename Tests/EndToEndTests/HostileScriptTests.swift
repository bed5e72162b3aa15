import Foundation
import XCTest

/// Scripts written to hurt the host. A plugin may come from someone the app
/// does not trust, and whatever its script does, the host keeps its process,
/// its output format and its files, and a sandboxed plugin cannot reach
/// another's globals.
final class HostileScriptTests: ScratchTestCase {
    private func jsonLines(_ stdout: String) -> [[String: Any]] {
        stdout.split(separator: "\n").map { line in
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            XCTAssertNotNil(object, "not one JSON object: \(line)")
            return object ?? [:]
        }
    }

    func testOsExitIsAnErrorAndWritesBecomeLogEvents() throws {
        try write("plugins/rude/init.lua", """
            local mf = require "moonflow"
            return mf.feature {
              name = "rude", initial = { n = 0 }, actions = { quit = {}, talk = {}, bump = {} }, mutations = { bump = {} },
              handle = function(a)
                if a.type == "quit" then os.exit(3) end
                if a.type == "talk" then io.write("raw ", 1, " ", 2.5, "\\n"); io.stdout:write("via stdout") return end
                return { type = "bump" }
              end,
              reduce = function(s) s.n = s.n + 1 return s end,
            }
            """)
        try write("in.jsonl", "{\"type\":\"quit\"}\n{\"type\":\"talk\"}\n{\"type\":\"bump\"}\n")
        let result = try Moonflow.run(["run", "plugins/rude", "--actions", "in.jsonl", "--format", "jsonl", "--clock", "virtual"], in: scratch)
        XCTAssertEqual(result.status, 1, "an error happened, the host did not exit 3")
        let events = jsonLines(result.stdout)
        let error = events.first { $0["event"] as? String == "error" }
        XCTAssertTrue((error?["message"] as? String)?.contains("os.exit is not available under moonflow run: the host owns the process") == true, result.stdout)
        XCTAssertEqual(error?["where"] as? String, "plugins/rude/init.lua:5")
        let logs = events.filter { $0["event"] as? String == "log" }.compactMap { $0["message"] as? String }
        XCTAssertEqual(logs, ["raw 1 2.5", "via stdout"])
        XCTAssertEqual((events.last?["state"] as? [String: Any])?["n"] as? Int, 1, "the input after os.exit still ran")
    }

    func testAHandlerStuckInAPatternMatchIsStoppedAndReported() throws {
        try write("plugins/slow/init.lua", """
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
        let result = try Moonflow.run(["run", "plugins/slow", "--actions", "in.jsonl", "--format", "jsonl", "--clock", "virtual", "--time-limit", "200"], in: scratch)
        XCTAssertEqual(result.status, 1)
        let events = jsonLines(result.stdout)
        let error = events.first { $0["event"] as? String == "error" }
        XCTAssertTrue((error?["message"] as? String)?.contains("time limit of 200 ms exceeded") == true, result.stdout)
        XCTAssertEqual((events.last?["state"] as? [String: Any])?["n"] as? Int, 1)
    }

    func testSandboxedRequireReadsOnlyTheScriptsOwnModules() throws {
        try write("secret.conf", "return 'SECRET'\n")
        try write("other/passwd.lua", "root:x:0:0\n")
        try write("app/util.lua", "return { ok = true }\n")
        try write("app/main.lua", """
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
        XCTAssertFalse(result.stdout.contains("SECRET") || result.stdout.contains("root:x") || result.stdout.contains("passwd.lua:"), result.stdout)
        XCTAssertTrue(result.stdout.contains("\tno file 'app/secret.lua'"), result.stdout)
        XCTAssertTrue(result.stdout.contains("\nnil\t../?.conf"), "no searchpath to probe files with: \(result.stdout)")
        XCTAssertTrue(result.stdout.contains("false\tsetmetatable: the sandbox's globals cannot get a metatable"), result.stdout)
        XCTAssertTrue(result.stdout.hasSuffix("true\ttable\n"), result.stdout)
    }

    func testASandboxedChildCannotChangeItsSiblingsGlobals() throws {
        try write("plugins/bully/init.lua", """
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
        try write("plugins/victim/init.lua", """
            local mf = require "moonflow"
            return mf.feature {
              name = "victim", initial = { text = "" }, actions = { go = {} }, mutations = { set = { text = "string" } },
              handle = function() return { type = "set", text = string.upper("ok") .. tostring(1) } end,
              reduce = function(s, m) s.text = m.text return s end,
            }
            """)
        try write("plugins/pair/init.lua", """
            local mf = require "moonflow"
            return mf.compose {
              name = "pair", children = { bully = "bully", victim = "victim" },
              route = function(a) return a.to, { type = "go" } end,
              combine = function(s) return { done = s.bully.done, text = s.victim.text } end,
            }
            """)
        try write("in.jsonl", "{\"type\":\"go\",\"to\":\"bully\"}\n{\"type\":\"go\",\"to\":\"victim\"}\n")
        let result = try Moonflow.run(["run", "plugins/pair", "--sandbox", "--actions", "in.jsonl", "--format", "jsonl", "--clock", "virtual"], in: scratch)
        let events = jsonLines(result.stdout)
        let state = events.last?["state"] as? [String: Any]
        XCTAssertEqual(state?["done"] as? Bool, true, result.stdout)
        XCTAssertEqual(state?["text"] as? String, "OK1", "the sibling's string.upper and tostring are untouched: \(result.stdout)")
        XCTAssertTrue(result.stdout.contains("setmetatable: a sandboxed plugin's globals cannot get a metatable"), result.stdout)
        XCTAssertTrue(result.stdout.contains(#""where":"plugins/bully/init.lua:7""#), "print names the plugin's line: \(result.stdout)")
    }
}
