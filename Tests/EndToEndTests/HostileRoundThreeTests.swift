import Foundation
import XCTest

/// The third round of hostile scripts and input, through the built binary as users run it.
final class HostileRoundThreeTests: ScratchTestCase {
    private func errors(_ stdout: String) -> [String] {
        stdout.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]).flatMap {
                $0["event"] as? String == "error" ? $0["message"] as? String : nil
            }
        }
    }

    /// `moonflow run` on the real clock (the default) runs Lua on a libdispatch worker,
    /// which blocked the watchdog's signal: a `while true do end` was declared stuck at
    /// limit + 2 s and spun on at 100% CPU. Now it stops at its limit and the run goes on.
    func testALuaLoopStopsAtItsLimitOnTheRealClock() throws {
        try write("plugins/spin/init.lua", """
            local mf = require "moonflow"
            return mf.feature {
              name = "spin", initial = { n = 0 }, actions = { spin = {}, bump = {} }, mutations = { bump = {} },
              handle = function(a) if a.type == "spin" then while true do end end return { type = "bump" } end,
              reduce = function(s) s.n = s.n + 1 return s end,
            }
            """)
        for extra in [[], ["--sandbox"]] {
            let result = try Moonflow.run(["run", "plugins/spin", "--format", "jsonl", "--actions", "-", "--time-limit", "200"] + extra,
                                          in: scratch, input: "{\"type\":\"spin\"}\n{\"type\":\"spin\"}\n{\"type\":\"bump\"}\n")
            let errors = errors(result.stdout)
            XCTAssertEqual(errors.count, 2, "\(extra): \(result.stdout)")
            for message in errors {
                XCTAssertTrue(message.hasPrefix("time limit of 200 ms exceeded"), "\(extra): \(message)")
            }
            XCTAssertFalse(result.stdout.contains("cannot be interrupted"), "\(extra): \(result.stdout)")
            XCTAssertTrue(result.stdout.contains("\"state\":{\"n\":1}"), "the run goes on in the same host (\(extra)): \(result.stdout)")
        }
    }

    /// The sandbox's `require` resolves links: a module that links out of the plugin's folder
    /// (a `settings.lua` pointing at a `.env` elsewhere) is refused, by `run --sandbox` and by
    /// `replay` (sandboxed by default); one inside it, and a plugin folder that is itself a
    /// link, still load.
    func testASandboxedRequireRefusesALinkOutOfThePluginFolder() throws {
        try write("secret.lua", "TOKEN = 'hunter2'\nreturn { token = TOKEN }\n")
        try write("plugins/leaky/inside.lua", "return { ok = true }\n")
        try write("plugins/leaky/init.lua", """
            local mf = require "moonflow"
            local inside = require "leaky.inside"
            local settings = require "leaky.settings"
            return mf.feature { name = "leaky", initial = { token = settings.token or "", ok = inside.ok },
              actions = {}, mutations = {}, handle = function() end, reduce = function(s) return s end }
            """)
        try FileManager.default.createSymbolicLink(atPath: scratch.appendingPathComponent("plugins/leaky/settings.lua").path,
                                                   withDestinationPath: "../../secret.lua")
        let run = try Moonflow.run(["run", "plugins/leaky", "--sandbox", "--clock", "virtual", "--format", "jsonl", "--actions", "-"], in: scratch, input: "")
        XCTAssertEqual(run.status, 1, run.stdout)
        XCTAssertFalse(run.stdout.contains("hunter2"), run.stdout)
        XCTAssertTrue(run.stdout.contains("module 'leaky.settings' not found: plugins/leaky/settings.lua leads outside the plugin's folder"), run.stdout)
        // A link that stays inside loads.
        try FileManager.default.removeItem(atPath: scratch.appendingPathComponent("plugins/leaky/settings.lua").path)
        try FileManager.default.createSymbolicLink(atPath: scratch.appendingPathComponent("plugins/leaky/settings.lua").path,
                                                   withDestinationPath: "inside.lua")
        let ok = try Moonflow.run(["run", "plugins/leaky", "--sandbox", "--clock", "virtual", "--format", "jsonl", "--actions", "-"], in: scratch, input: "")
        XCTAssertEqual(ok.status, 0, ok.stdout)
    }

    /// `run --inspect` waited for its inspector's first line without bound, with SIGINT and
    /// SIGTERM held for later: a child that never spoke kept the run forever. Now a stop
    /// signal ends the wait (and the child), as does a time limit (MoonflowToolTests).
    func testRunInspectStopsOnSIGTERMWhileItsInspectorSaysNothing() throws {
        // moonflow beside a moonflow-inspector that never speaks.
        let bin = scratch.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let moonflow = bin.appendingPathComponent("moonflow")
        if link(try Moonflow.binary().path, moonflow.path) != 0 { try FileManager.default.copyItem(at: try Moonflow.binary(), to: moonflow) }
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
}
