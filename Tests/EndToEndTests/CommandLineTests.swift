import Foundation
import XCTest

/// `moonflow check`, `exec` and the command line's exit statuses, on the built binary.
final class CommandLineTests: ScratchTestCase {
    /// `moonflow ARGS` run in the scratch folder.
    private func runHere(_ arguments: [String]) throws -> Moonflow.Result {
        try Moonflow.run(arguments, in: scratch)
    }

    // MARK: check

    func testCheckPassesOnEveryPlugin() throws {
        let plugins = try GoldenRunTests.plugins()
        XCTAssertTrue(plugins.contains("counter"))
        for plugin in plugins {
            let result = try Moonflow.run(["check", "plugins/\(plugin)"])
            XCTAssertEqual(result.status, 0, "moonflow check plugins/\(plugin): \(result.stderr)")
            XCTAssertEqual(result.stdout, "plugins/\(plugin): ok\n")
        }
    }

    func testCheckNamesFileLineAndFieldOfABrokenPlugin() throws {
        let file = try write(
            "broken/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "broken",
              initial = { n = 0 },
              actions = {}, mutations = {},
              handle = 42,
              reduce = function(state) return state end,
            }
            """)
        let result = try runHere(["check", "broken"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("\(file):6:"), "no file:line of the handle key in: \(result.stderr)")
        XCTAssertTrue(result.stderr.contains("field 'handle' must be a function (got number)"), result.stderr)
        XCTAssertFalse(result.stdout.contains("ok"))
    }

    func testCheckFailsOnAnUndeclaredStrategyAction() throws {
        let file = try write(
            "strategy/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "strategy",
              initial = {},
              actions = { go = {} }, mutations = {},
              strategy = { stop = "latest" },
              handle = function() end,
              reduce = function(state) return state end,
            }
            """)
        let result = try runHere(["check", "strategy"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("\(file):6:"), result.stderr)
        XCTAssertTrue(result.stderr.contains("strategy names undeclared action 'stop'"), result.stderr)
    }

    func testCheckFailsOnABadRepositoryDeclaration() throws {
        try write(
            "repo/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "repo",
              initial = {},
              actions = {}, mutations = {},
              repositories = { users = { seed = { { name = "no id" } } } },
              handle = function() end,
              reduce = function(state) return state end,
            }
            """)
        let result = try runHere(["check", "repo"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("repositories.users.seed[1]: a record needs an 'id'"), result.stderr)
    }

    // MARK: syntax errors

    func testSyntaxErrorInAPluginExitsOneWithFileLine() throws {
        let file = try write(
            "syntax/init.lua",
            "local mf = require \"moonflow\"\nreturn mf.feature {\n  name = \"syntax\",\n  initial = { ,\n}\n")
        let run = try runHere(["run", "syntax", "--format", "jsonl", "--clock", "virtual"])
        XCTAssertEqual(run.status, 1)
        XCTAssertTrue(run.stdout.hasPrefix("{\"event\":\"error\""), run.stdout)
        XCTAssertTrue(run.stdout.contains("\"where\":\"\(file):4\""), run.stdout)
        let check = try runHere(["check", "syntax"])
        XCTAssertEqual(check.status, 1)
        XCTAssertTrue(check.stderr.contains("\(file):4:"), check.stderr)
    }

    func testSyntaxErrorInAPluginModuleNamesTheModule() throws {
        try write(
            "plugins/modular/init.lua",
            """
            local mf = require "moonflow"
            local helper = require "modular.helper"
            return mf.feature {
              name = "modular", initial = {}, actions = {}, mutations = {},
              handle = function() end, reduce = function(s) return helper(s) end,
            }
            """)
        try write("plugins/modular/helper.lua", "return function(s)\n  return s +\nend\n")
        let result = try runHere(["check", "plugins/modular"])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("plugins/modular/helper.lua:3:"), result.stderr)
    }

    // MARK: usage errors

    func testUsageErrorsExitTwo() throws {
        for arguments in [
            ["run", "plugins/counter", "--bogus"],
            ["run"],
            ["run", "plugins/does-not-exist/"],
            ["run", "nowhere/plugin.lua"],
            ["run", "plugins/counter", "--clock", "sundial"],
            ["frobnicate"],
        ] {
            let result = try Moonflow.run(arguments)
            XCTAssertEqual(result.status, 2, "moonflow \(arguments.joined(separator: " ")): stderr \(result.stderr)")
            XCTAssertTrue(result.stdout.isEmpty, "usage errors print to stderr: \(result.stdout)")
            XCTAssertFalse(result.stderr.isEmpty)
        }
    }

    func testAMemoryLimitOutOfRangeIsAUsageErrorNamingTheFlagAndItsRange() throws {
        try write("script.lua", "print('ran')\n")
        try write(
            "rec.jsonl",
            """
            {"record":"moonflow-session","format":1,"feature":"counter","version":1,"path":"\(Moonflow.root.path)/plugins/counter","clock":"virtual"}
            """ + "\n")
        let counter = Moonflow.root.appendingPathComponent("plugins/counter").path
        // 2^44 MB is 2^64 bytes (it wrapped to no limit at all); Int.max wrapped negative.
        for value in ["0", "-5", "1048577", "17592186044416", "9223372036854775807"] {
            for command in [
                ["run", counter, "--clock", "virtual"], ["check", counter], ["exec", "script.lua"],
                ["test", counter], ["replay", "rec.jsonl", "--plugins", "/"],
            ] {
                let arguments = Array(command.prefix(1)) + ["--memory-limit", value] + command.dropFirst()
                let result = try runHere(arguments)
                XCTAssertEqual(result.status, 2, "\(arguments): \(result.stdout) \(result.stderr)")
                XCTAssertTrue(
                    result.stderr.contains(
                        "--memory-limit must be a number of megabytes from 1 to 1048576 (got \(value))"),
                    "\(arguments): \(result.stderr)")
                XCTAssertFalse(result.stdout.contains("ran"), "\(arguments)")
            }
        }
        let top = try runHere(["exec", "--memory-limit", "1048576", "script.lua"])
        XCTAssertEqual(top.status, 0, top.stderr)
        XCTAssertEqual(top.stdout, "ran\n")
    }

    func testTheOtherNumericFlagsAtTheirExtremesAreUsageErrorsOrRunWithoutATrap() throws {
        let counter = Moonflow.root.appendingPathComponent("plugins/counter").path
        try write("in.jsonl", #"{"type":"increment"}"# + "\n")
        let max = "9223372036854775807"
        let cases: [([String], Int32, String?)] = [
            (["run", counter, "--time-limit", max], 2, "--time-limit must be at most 86400000 ms"),
            (["run", counter, "--time-limit", "0"], 2, "--time-limit must be a positive number of milliseconds"),
            (
                ["run", counter, "--inspect", "--inspect-frames", max], 2,
                "--inspect-frames must be a number of frames from 1 to 100000000"
            ),
            (
                ["run", counter, "--inspect", "--inspect-memory", max], 2,
                "--inspect-memory must be a number of megabytes from 1 to 1048576"
            ),
            (
                ["run", counter, "--clock", "virtual", "--until", "-1"], 2,
                "--until must be a number of milliseconds, 0 or more"
            ),
            (["run", counter, "--clock", "virtual", "--actions", "in.jsonl", "--until", max], 0, nil),
            (["test", counter, "--jobs", "0"], 2, "--jobs 0: give 1 or more files at once"),
            (["test", counter, "--jobs", max], 0, nil),
            (["test", counter, "--shard", "\(max)/\(max)"], 0, nil),
            (["test", counter, "--shard", "0/\(max)"], 2, nil),
        ]
        for (arguments, status, message) in cases {
            let result = try runHere(arguments)
            XCTAssertEqual(result.status, status, "\(arguments): \(result.stdout) \(result.stderr)")
            XCTAssertFalse(result.stderr.contains("Fatal error"), "\(arguments): \(result.stderr)")
            if let message { XCTAssertTrue(result.stderr.contains(message), "\(arguments): \(result.stderr)") }
        }
    }

    func testMissingPathIsNamed() throws {
        let result = try Moonflow.run(["run", "plugins/does-not-exist/"])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains("plugins/does-not-exist/ does not exist"), result.stderr)
    }

    func testMissingActionsFileIsAUsageError() throws {
        let result = try Moonflow.run(["run", "plugins/counter", "--actions", "nowhere.jsonl"])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains("nowhere.jsonl"), result.stderr)
    }

    // MARK: exec

    func testExecRunsAScriptWithArguments() throws {
        let script = try write(
            "script.lua",
            """
            local mf = require "moonflow"
            local n = select("#", ...)
            print(arg[0], n, arg[1], arg[2], ...)
            print(type(mf.version), #arg)
            """)
        let result = try runHere(["exec", script, "one", "two words"])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "\(script)\t2\tone\ttwo words\tone\ttwo words\nstring\t2\n")
    }

    /// A C module from the system's Lua path (lua-cjson, which scripts/setup installs) finds
    /// the Lua API in the binary: the shared liblua5.4 in a plain build, the binary's own
    /// exported copy in scripts/build-release's, which links Lua in.
    func testExecLoadsALuaCModule() throws {
        let script = try write(
            "cmodule.lua",
            """
            local cjson = require "cjson"
            print(cjson.encode({ n = 1 }), cjson.decode('[1, 2, "three"]')[3])
            """)
        let result = try runHere(["exec", script])
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.stdout, "{\"n\":1}\tthree\n")
    }

    func testExecErrorExitsOneWithMessageAndTraceback() throws {
        let script = try write("fail.lua", "local function explode() error(\"boom\") end\nexplode()\n")
        let result = try runHere(["exec", script])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.contains("\(script):1: boom"), result.stderr)
        XCTAssertTrue(result.stderr.contains("stack traceback:"), result.stderr)
        XCTAssertTrue(result.stderr.contains("\(script):2:"), result.stderr)
    }

    // MARK: run

    func testBadInputLinesAreSkippedAndTheRunExitsOne() throws {
        let actions = try write(
            "actions.jsonl",
            "{\"type\":\"increment\"}\n{oops\n\n{\"type\":\"increment\",\"by\":\"two\"}\n{\"type\":\"increment\"}\n")
        let counter = Moonflow.root.appendingPathComponent("plugins/counter").path
        let result = try runHere(["run", counter, "--actions", actions, "--format", "jsonl", "--clock", "virtual"])
        XCTAssertEqual(result.status, 1)
        let lines = result.stdout.split(separator: "\n")
        XCTAssertEqual(lines.filter { $0.contains("\"event\":\"error\"") }.count, 2, result.stdout)
        XCTAssertTrue(result.stdout.contains("\"where\":\"\(actions):2\""), result.stdout)
        XCTAssertTrue(result.stdout.contains("\"where\":\"\(actions):4\""), result.stdout)
        XCTAssertTrue(
            lines.last?.contains("\"state\":{\"count\":2}") ?? false,
            "the run goes on after bad lines: \(result.stdout)")
    }

    func testPrintInAPluginBecomesALogEventAndKeepsJSONLinesClean() throws {
        try write(
            "plugins/talker/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "talker", initial = { n = 0 }, actions = { go = {} }, mutations = { went = {} },
              handle = function(a, s)
                print("handling", a.type, s.n)
                return { type = "went" }
              end,
              reduce = function(s) s.n = s.n + 1 return s end,
            }
            """)
        let actions = try write("go.jsonl", "{\"type\":\"go\"}\n")
        let result = try runHere([
            "run", "plugins/talker", "--actions", actions, "--format", "jsonl", "--clock", "virtual",
        ])
        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 5, result.stdout)
        XCTAssertEqual(
            lines[2], #"{"event":"log","t":0,"message":"handling\tgo\t0","where":"plugins/talker/init.lua:5"}"#)
        for line in lines { XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(line.utf8)), line) }
    }
}
