import Foundation
import XCTest

/// The host owns its process and its output: a plugin's `os.exit` and writes to standard
/// output, a popen handle or a finalizer that blocks or loops, an inspector that says nothing,
/// do not end it early, break its output format or keep it alive.
final class HostKeepsItsProcessTests: ScratchTestCase {
    func testOsExitAtAPluginsTopLevelEndsNeitherCheckNorReplay() throws {
        try write(
            "plugins/quit/init.lua",
            """
            local mf = require "moonflow"
            os.exit(0)
            return mf.feature {
              name = "quit", initial = { n = 0 }, actions = { go = {} }, mutations = {},
              handle = function() end, reduce = function(s) return s end,
            }
            """)
        let check = try Moonflow.run(["check", "plugins/quit"], in: scratch)
        XCTAssertEqual(check.status, 1, check.stdout + check.stderr)
        XCTAssertTrue(
            (check.stdout + check.stderr).contains("os.exit is not available under moonflow check"),
            check.stdout + check.stderr)

        try write(
            "rec.jsonl",
            """
            {"record":"moonflow-session","format":1,"feature":"quit","version":1,"path":"plugins/quit","clock":"virtual"}
            {"event":"state","t":0,"seq":0,"state":{"n":0}}
            {"input":{"type":"go"},"t":0}
            """)
        let replay = try Moonflow.run(["replay", "rec.jsonl"], in: scratch)
        XCTAssertNotEqual(replay.status, 0, "a plugin that cannot load does not replay as identical: \(replay.stdout)")
        XCTAssertFalse(replay.stdout.contains("identical"), replay.stdout)
    }

    /// A plugin (trusted) that starts a child with io.popen and drops the handle: Lua's
    /// finalizer pclosed it as the state closed, which waits for the child, and `run` and
    /// `test` never ended. (The child here runs until moonflow ends: the harness kills them
    /// after 25 s.)
    func testAPopenHandleDroppedWithoutCloseDoesNotKeepRunOrTestAlive() throws {
        try write(
            "plugins/piper/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "piper", initial = { n = 0 }, actions = { start = {} }, mutations = { bump = {} },
              handle = function() io.popen(\(Self.untilMoonflowEnds)) return { type = "bump" } end,
              reduce = function(s) s.n = s.n + 1 return s end,
            }
            """)
        try write(
            "plugins/piper/spec/piper_spec.lua",
            """
            local test = require "moonflow.test"
            describe("piper", function()
              it("starts a child", function()
                test.store("piper"):send({ type = "start" }, function(s) s.n = 1 end)
                collectgarbage()
              end)
            end)
            """)
        for clock in ["virtual", "real"] {
            let result = try Moonflow.run(
                ["run", "plugins/piper", "--actions", "-", "--format", "jsonl", "--clock", clock],
                in: scratch, timeout: 25, input: #"{"type":"start"}"# + "\n")
            XCTAssertEqual(result.status, 0, "\(clock): \(result.stdout)\(result.stderr)")
            XCTAssertEqual(jsonlLastState(result.stdout)?["n"] as? Int, 1, result.stdout)
        }
        let test = try Moonflow.run(["test", "plugins/piper/spec"], in: scratch, timeout: 25)
        XCTAssertEqual(test.status, 0, test.stdout + test.stderr)
    }

    /// Closing a state is bounded: a finalizer that blocks in C as the state closes (past the
    /// time limit and the stuck grace) leaves the state behind, and the run ends.
    func testAFinalizerThatBlocksAsTheStateClosesDoesNotKeepTheRunAlive() throws {
        try write(
            "plugins/holdon/init.lua",
            """
            local mf = require "moonflow"
            HOLD = setmetatable({}, { __gc = function() os.execute(\(Self.untilMoonflowEnds)) end })
            return mf.feature {
              name = "holdon", initial = { n = 0 }, actions = { bump = {} }, mutations = { bump = {} },
              handle = function() return { type = "bump" } end,
              reduce = function(s) s.n = s.n + 1 return s end,
            }
            """)
        let result = try Moonflow.run(
            [
                "run", "plugins/holdon", "--actions", "-", "--format", "jsonl", "--clock", "virtual",
                "--time-limit", "200",
            ], in: scratch, timeout: 25, input: #"{"type":"bump"}"# + "\n")
        XCTAssertEqual(jsonlLastState(result.stdout)?["n"] as? Int, 1, result.stdout + result.stderr)
    }

    func testAFinalizerThatLoopsAtExitDoesNotHoldTheProcess() throws {
        try write(
            "plugins/late/init.lua",
            """
            local mf = require "moonflow"
            KEEP = setmetatable({}, { __gc = function() while true do end end })
            return mf.feature {
              name = "late", initial = { n = 0 }, actions = { go = {} }, mutations = {},
              handle = function() end, reduce = function(s) return s end,
            }
            """)
        let result = try runJSONL("late", [#"{"type":"go"}"#], ["--time-limit", "200"])
        XCTAssertEqual(result.status, 0, result.stderr)
    }

    /// `run --inspect` waited for its inspector's first line without bound, with SIGINT and
    /// SIGTERM held for later: a child that never spoke kept the run forever. Now a stop
    /// signal ends the wait (and the child), as does a time limit (MoonflowToolTests).
    func testRunInspectStopsOnSIGTERMWhileItsInspectorSaysNothing() throws {
        // moonflow beside a moonflow-inspector that never speaks.
        let bin = scratch.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let moonflow = bin.appendingPathComponent("moonflow")
        if link(try Moonflow.binary().path, moonflow.path) != 0 {
            try FileManager.default.copyItem(at: try Moonflow.binary(), to: moonflow)
        }
        let fake = bin.appendingPathComponent("moonflow-inspector")
        try Data("#!/bin/sh\necho 'fake inspector up' >&2\nexec sleep 600\n".utf8).write(to: fake)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: fake.path)

        let process = Process()
        process.executableURL = moonflow
        process.arguments = ["run", "plugins/counter", "--inspect", "--format", "jsonl", "--actions", "-"]
        process.currentDirectoryURL = Moonflow.root
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = Pipe()
        let ended = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in ended.signal() }
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        var said = ""
        while !said.contains("fake inspector up") {
            let data = errors.fileHandleForReading.availableData
            guard !data.isEmpty else { break }
            said += String(decoding: data, as: UTF8.self)
        }
        XCTAssertTrue(said.contains("fake inspector up"), said)
        kill(process.processIdentifier, SIGTERM)
        XCTAssertEqual(ended.wait(timeout: .now() + 30), .success, "moonflow run ends on SIGTERM")
        said += String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(process.terminationStatus, 1, said)
        XCTAssertTrue(said.contains("moonflow: --inspect stopped by SIGTERM while"), said)
    }

    func testOsExitIsAnErrorAndWritesBecomeLogEvents() throws {
        try write(
            "plugins/rude/init.lua",
            """
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
        let result = try Moonflow.run(
            ["run", "plugins/rude", "--actions", "in.jsonl", "--format", "jsonl", "--clock", "virtual"], in: scratch)
        XCTAssertEqual(result.status, 1, "an error happened, the host did not exit 3")
        let events = jsonlObjects(result.stdout)
        let error = events.first { $0["event"] as? String == "error" }
        XCTAssertTrue(
            (error?["message"] as? String)?.contains(
                "os.exit is not available under moonflow run: the host owns the process") == true, result.stdout)
        XCTAssertEqual(error?["where"] as? String, "plugins/rude/init.lua:5")
        let logs = events.filter { $0["event"] as? String == "log" }.compactMap { $0["message"] as? String }
        XCTAssertEqual(logs, ["raw 1 2.5", "via stdout"])
        XCTAssertEqual((events.last?["state"] as? [String: Any])?["n"] as? Int, 1, "the input after os.exit still ran")
    }
}
