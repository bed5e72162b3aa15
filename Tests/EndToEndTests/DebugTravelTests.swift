import Foundation
import XCTest

/// Going back in a run under the debugger (`stepBack`, `reverseContinue`), as a user does it:
/// `moonflow run --clock virtual --actions FILE --debug`, an editor over a real socket.
final class DebugTravelTests: XCTestCase {
    /// A reducer whose result depends on a module-level counter: going back is exact only if
    /// that counter is as it was then too.
    private static let plugin = """
        local mf = require "moonflow"
        local seen = 0
        return mf.feature {
          name = "ledger",
          initial = { total = 0 },
          state = { total = "integer" },
          actions = { add = { n = "integer" } },
          mutations = { added = { n = "integer" } },
          handle = function(action)
            return { type = "added", n = action.n }
          end,
          reduce = function(state, m)
            seen = seen + 1
            local before = state.total
            state.total = before + m.n * seen
            return state
          end,
        }
        """
    private enum Line { static let seen = 13, before = 14, total = 15 }

    private var folder: URL!
    private var file: String { folder.appendingPathComponent("ledger/init.lua").path }
    private var actions: String { folder.appendingPathComponent("actions.jsonl").path }

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-travel-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("ledger"), withIntermediateDirectories: true)
        try Self.plugin.write(toFile: file, atomically: true, encoding: .utf8)
        try #"{"type":"add","n":5}\#n{"type":"add","n":7}\#n{"type":"add","n":1}\#n"#.write(
            toFile: actions, atomically: true, encoding: .utf8)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: folder) }

    /// `moonflow ARGS` in the test's folder, once it said where its debugger listens.
    private func started(_ arguments: [String]) throws -> (Process, Pipe, Pipe, DAPClient) {
        let process = Process()
        process.executableURL = try Moonflow.binary()
        process.arguments = arguments
        process.currentDirectoryURL = folder
        let output = Pipe(), errors = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        var announced = Data()
        while !announced.contains(UInt8(ascii: "\n")) {
            let more = errors.fileHandleForReading.availableData
            guard !more.isEmpty else { break }
            announced.append(more)
        }
        let line = String(decoding: announced, as: UTF8.self)
        let port = try XCTUnwrap(
            line.split(separator: ":").dropFirst(2).first.flatMap { Int($0.prefix { $0.isNumber }) }, line)
        let token = try XCTUnwrap(line.firstMatch(of: /with token ([0-9a-f]{32})/), line)
        return (process, output, errors, try DAPClient(port: port, token: String(token.1)))
    }

    private func printed(by arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = try Moonflow.binary()
        process.arguments = arguments
        process.currentDirectoryURL = folder
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text
    }

    private func attach(_ editor: DAPClient, breakpoints lines: [Int]) throws {
        let capabilities = try editor.request("initialize")["body"] as? [String: Any]
        XCTAssertEqual(capabilities?["supportsStepBack"] as? Bool, true)
        _ = try editor.request("attach", ["token": editor.token])
        _ = try editor.request(
            "setBreakpoints", ["source": ["path": file], "breakpoints": lines.map { ["line": $0] }])
        _ = try editor.request("configurationDone")
    }

    /// A spec of the ledger in `ledger/spec/NAME`: two adds, the second counted twice. Returns
    /// its folder.
    @discardableResult
    private func writeLedgerSpec(_ name: String) throws -> URL {
        let specs = folder.appendingPathComponent("ledger/spec")
        try FileManager.default.createDirectory(at: specs, withIntermediateDirectories: true)
        try """
        local T = require "moonflow.test"
        describe("ledger", function()
          it("adds each amount times how many came before it and this one", function()
            local store = T.store("ledger")
            store:send({ type = "add", n = 5 }, function(s) s.total = 5 end)
            store:send({ type = "add", n = 7 }, function(s) s.total = 19 end)
            store:finish()
          end)
        end)
        """.write(toFile: specs.appendingPathComponent(name).path, atomically: true, encoding: .utf8)
        return specs
    }

    /// The stopped thread's frames, innermost first.
    private func stack(_ editor: DAPClient) throws -> [[String: Any]] {
        let trace = try editor.request("stackTrace", ["threadId": 1])
        return (trace["body"] as? [String: Any])?["stackFrames"] as? [[String: Any]] ?? []
    }

    /// `moonflow ARGS` with an editor attached and breakpoints on the ledger's `lines`, stopped
    /// at the second hit.
    private func stoppedAtSecondHit(
        _ arguments: [String], breakpoints lines: [Int]
    ) throws -> (Process, Pipe, DAPClient) {
        let (process, output, _, editor) = try started(arguments)
        try attach(editor, breakpoints: lines)
        _ = try stopped(editor)
        _ = try editor.request("continue", ["threadId": 1])
        _ = try stopped(editor)
        return (process, output, editor)
    }

    /// Where the editor is stopped: the top frame's line, and an expression's value there.
    private func line(_ editor: DAPClient) throws -> Int? {
        try stack(editor).first?["line"] as? Int
    }

    /// Clears the breakpoints of `path` (the ledger's by default), lets the run go on to its
    /// end, and returns what it printed.
    private func finished(
        _ editor: DAPClient, _ process: Process, _ output: Pipe, clearing path: String? = nil
    )
        throws -> String
    {
        _ = try editor.request(
            "setBreakpoints", ["source": ["path": path ?? file], "breakpoints": [[String: Any]]()])
        _ = try editor.request("continue", ["threadId": 1])
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return printed
    }

    private func value(_ editor: DAPClient, _ expression: String) throws -> String? {
        let answer = try editor.request("evaluate", ["expression": expression, "frameId": 1])
        return (answer["body"] as? [String: Any])?["result"] as? String
    }

    private func stopped(_ editor: DAPClient) throws -> [String: Any] {
        (try editor.event("stopped")["body"] as? [String: Any]) ?? [:]
    }

    /// The issue's "done when": stopped in `reduce` on the second action, `reverseContinue`
    /// stops at the first action's hit with every value as it was (the module-level counter
    /// too); `next` then `stepBack` come back to the line before; and the run ends with the
    /// output of a run that never went back.
    func testReverseContinueAndStepBackComeBackExactlyAndTheOutputIsUnchanged() throws {
        let run = ["run", "ledger", "--clock", "virtual", "--actions", "actions.jsonl", "--format", "jsonl"]
        let plain = try printed(by: run)
        XCTAssertTrue(plain.contains(#""total":22"#), plain)  // 5*1 + 7*2 + 1*3

        let (process, output, _, editor) = try started(run + ["--debug", "127.0.0.1:0", "--debug-wait"])
        defer { if process.isRunning { process.terminate() } }
        try attach(editor, breakpoints: [Line.before])
        XCTAssertEqual(try stopped(editor)["reason"] as? String, "breakpoint")
        XCTAssertEqual(try value(editor, "m.n"), "5")
        _ = try editor.request("continue", ["threadId": 1])
        XCTAssertEqual(try stopped(editor)["reason"] as? String, "breakpoint")
        XCTAssertEqual(try value(editor, "m.n"), "7")
        XCTAssertEqual(try value(editor, "seen"), "2")

        let back = try editor.request("reverseContinue", ["threadId": 1])
        XCTAssertEqual(back["success"] as? Bool, true, "\(back)")
        let hit = try stopped(editor)
        XCTAssertEqual(hit["reason"] as? String, "breakpoint", "\(hit)")
        XCTAssertNotNil(hit["hitBreakpointIds"])
        XCTAssertEqual(try line(editor), Line.before)
        XCTAssertEqual(try value(editor, "m.n"), "5", "the first action's hit")
        XCTAssertEqual(try value(editor, "seen"), "1", "the module-level counter as it was then")
        XCTAssertEqual(try value(editor, "state.total"), "0")

        _ = try editor.request("next", ["threadId": 1])
        XCTAssertEqual(try stopped(editor)["reason"] as? String, "step")
        XCTAssertEqual(try line(editor), Line.total)
        XCTAssertEqual(try value(editor, "before"), "0")
        _ = try editor.request("stepBack", ["threadId": 1])
        XCTAssertEqual(try stopped(editor)["reason"] as? String, "step")
        XCTAssertEqual(try line(editor), Line.before, "the line before")
        XCTAssertEqual(try value(editor, "seen"), "1")

        // Forward again: the second action's hit comes again, then the run ends as it would have.
        _ = try editor.request("continue", ["threadId": 1])
        XCTAssertEqual(try stopped(editor)["reason"] as? String, "breakpoint")
        XCTAssertEqual(try value(editor, "m.n"), "7")
        XCTAssertEqual(try value(editor, "seen"), "2")
        let travelled = try finished(editor, process, output)
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertEqual(travelled, plain, "the same events as a run that never went back")
    }

    /// `restartFrame` on `reduce`, stopped on its last line in the second action: the run stops
    /// at the frame's first line with the reason `restart`, its argument, the state and the
    /// module-level counter as they were when it was called; going on, the output is unchanged.
    func testRestartingReduceStopsAtItsFirstLineWithEverythingAsWhenItWasCalled() throws {
        let run = ["run", "ledger", "--clock", "virtual", "--actions", "actions.jsonl", "--format", "jsonl"]
        let plain = try printed(by: run)
        let (process, output, editor) = try stoppedAtSecondHit(
            run + ["--debug", "127.0.0.1:0", "--debug-wait"], breakpoints: [Line.total])
        defer { if process.isRunning { process.terminate() } }
        XCTAssertEqual(try value(editor, "m.n"), "7")
        XCTAssertEqual(try value(editor, "seen"), "2")
        let frames = try stack(editor)
        XCTAssertEqual(frames.first?["canRestart"] as? Bool, true, "\(frames)")

        let restarted = try editor.request("restartFrame", ["frameId": 1])
        XCTAssertEqual(restarted["success"] as? Bool, true, "\(restarted)")
        XCTAssertEqual(try stopped(editor)["reason"] as? String, "restart")
        XCTAssertEqual(try line(editor), Line.seen, "reduce's first line")
        XCTAssertEqual(try value(editor, "m.n"), "7", "the second action's mutation")
        XCTAssertEqual(try value(editor, "seen"), "1", "the counter before this call added to it")
        XCTAssertEqual(try value(editor, "state.total"), "5")

        let far = try editor.request("restartFrame", ["frameId": 40])
        XCTAssertEqual(far["success"] as? Bool, false)
        XCTAssertTrue((far["message"] as? String ?? "").contains("frames 1 to"), "\(far)")

        let travelled = try finished(editor, process, output)
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertEqual(travelled, plain, "the same events as a run that never went back")
    }

    /// Restarting an outer frame: stopped in a helper that `reduce` called in a loop, frame 2
    /// (`reduce`) starts again from its first line, not the helper's last call.
    func testRestartingAnOuterFrameGoesToItsStartNotToTheInnerCall() throws {
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("nested"), withIntermediateDirectories: true)
        let nested = folder.appendingPathComponent("nested/init.lua").path
        try """
        local mf = require "moonflow"
        local function double(x)
          return x * 2
        end
        return mf.feature {
          name = "nested",
          initial = { total = 0 },
          state = { total = "integer" },
          actions = { add = { n = "integer" } },
          mutations = { added = { n = "integer" } },
          handle = function(action) return { type = "added", n = action.n } end,
          reduce = function(state, m)
            local sum = state.total
            for _ = 1, 3 do sum = sum + double(m.n) end
            state.total = sum
            return state
          end,
        }
        """.write(toFile: nested, atomically: true, encoding: .utf8)
        let (process, _, _, editor) = try started(
            [
                "run", "nested", "--clock", "virtual", "--actions", "actions.jsonl", "--debug", "127.0.0.1:0",
                "--debug-wait",
            ])
        defer { if process.isRunning { process.terminate() } }
        _ = try editor.request("initialize")
        _ = try editor.request("attach", ["token": editor.token])
        _ = try editor.request(
            "setBreakpoints",
            ["source": ["path": nested], "breakpoints": [["line": 3, "hitCondition": "== 6"]]])
        _ = try editor.request("configurationDone")
        _ = try stopped(editor)  // the third call of double in the second action
        XCTAssertEqual(try value(editor, "x"), "7")
        let inReduce = try editor.request("evaluate", ["expression": "sum", "frameId": 2])
        XCTAssertEqual((inReduce["body"] as? [String: Any])?["result"] as? String, "58", "30 + 2 * 7*2 so far")

        let restarted = try editor.request("restartFrame", ["frameId": 2])
        XCTAssertEqual(restarted["success"] as? Bool, true, "\(restarted)")
        XCTAssertEqual(try stopped(editor)["reason"] as? String, "restart")
        XCTAssertEqual(try line(editor), 13, "reduce's first line")
        XCTAssertEqual(try value(editor, "m.n"), "7")
        XCTAssertEqual(try value(editor, "state.total"), "30", "the first action's total, before this call")
        XCTAssertEqual(try value(editor, "sum"), "nil", "not yet assigned")
        _ = try editor.request("disconnect")
        process.waitUntilExit()
    }

    /// The same in a spec under `moonflow test --debug`: the file runs again from its start, and
    /// its results are reported once.
    func testGoingBackInASpecComesBackExactlyAndReportsEachResultOnce() throws {
        try writeLedgerSpec("ledger_spec.lua")
        let (process, output, editor) = try stoppedAtSecondHit(
            ["test", "ledger/spec/ledger_spec.lua", "--debug", "127.0.0.1:0", "--debug-wait"],
            breakpoints: [Line.before])
        defer { if process.isRunning { process.terminate() } }
        XCTAssertEqual(try value(editor, "m.n"), "7")

        let back = try editor.request("reverseContinue", ["threadId": 1])
        XCTAssertEqual(back["success"] as? Bool, true, "\(back)")
        XCTAssertEqual(try stopped(editor)["reason"] as? String, "breakpoint")
        XCTAssertEqual(try value(editor, "m.n"), "5")
        XCTAssertEqual(try value(editor, "seen"), "1")
        _ = try editor.request("next", ["threadId": 1])
        _ = try stopped(editor)
        XCTAssertEqual(try line(editor), Line.total)
        _ = try editor.request("stepBack", ["threadId": 1])
        XCTAssertEqual(try stopped(editor)["reason"] as? String, "step")
        XCTAssertEqual(try line(editor), Line.before)
        XCTAssertEqual(try value(editor, "state.total"), "0")

        let printed = try finished(editor, process, output)
        XCTAssertEqual(process.terminationStatus, 0, printed)
        XCTAssertTrue(printed.contains("1 passed, 0 failed"), printed)
        XCTAssertEqual(printed.components(separatedBy: "adds each amount").count, 2, "the result once: \(printed)")
    }

    /// Going back in the first of two spec files: the second file's results are all reported
    /// (the first's re-run hid as many results as it had reported, of every file after it too).
    func testGoingBackInOneSpecFileReportsEveryResultOfTheNext() throws {
        let specs = try writeLedgerSpec("a_spec.lua")
        try """
        describe("more", function()
          it("one", function() assert.equal(2, 1 + 1) end)
          it("two", function() assert.equal(4, 2 + 2) end)
        end)
        """.write(toFile: specs.appendingPathComponent("b_spec.lua").path, atomically: true, encoding: .utf8)
        let (process, output, editor) = try stoppedAtSecondHit(
            ["test", "ledger/spec", "--debug", "127.0.0.1:0", "--debug-wait"], breakpoints: [Line.before])
        defer { if process.isRunning { process.terminate() } }
        let back = try editor.request("reverseContinue", ["threadId": 1])
        XCTAssertEqual(back["success"] as? Bool, true, "\(back)")
        _ = try stopped(editor)
        let printed = try finished(editor, process, output)
        XCTAssertEqual(process.terminationStatus, 0, printed)
        XCTAssertTrue(printed.contains("3 passed, 0 failed"), printed)
        XCTAssertTrue(printed.contains("more one") && printed.contains("more two"), printed)
    }

    /// An exploration with no seed of its own draws one, and its budget reads the wall clock:
    /// going back in it runs the file again with the same seed and the same readings, so the
    /// run stepped back into is the one the editor was in.
    func testGoingBackInAnExplorationWithAFreshSeedComesBackToTheSameRun() throws {
        let counter = folder.appendingPathComponent("counter")
        try FileManager.default.copyItem(at: Moonflow.root.appendingPathComponent("plugins/counter"), to: counter)
        try FileManager.default.removeItem(at: counter.appendingPathComponent("spec"))
        try FileManager.default.createDirectory(
            at: counter.appendingPathComponent("spec"), withIntermediateDirectories: true)
        try """
        local T = require "moonflow.test"
        describe("counter", function()
          it("explores from a seed of its own", function()
            T.explore("counter", { runs = 4, length = 20, seconds = 60, quiet = true })
          end)
        end)
        """.write(
            toFile: counter.appendingPathComponent("spec/explore_spec.lua").path, atomically: true, encoding: .utf8)
        let source = counter.appendingPathComponent("init.lua").path
        let added =
            try XCTUnwrap(
                try String(contentsOfFile: source, encoding: .utf8).components(separatedBy: "\n").firstIndex {
                    $0.contains("state.count = state.count + m.n")
                }) + 1
        let (process, output, _, editor) = try started(
            ["test", "counter/spec/explore_spec.lua", "--debug", "127.0.0.1:0", "--debug-wait"])
        defer { if process.isRunning { process.terminate() } }
        _ = try editor.request("initialize")
        _ = try editor.request("attach", ["token": editor.token])
        _ = try editor.request(
            "setBreakpoints", ["source": ["path": source], "breakpoints": [["line": added, "hitCondition": "== 30"]]])
        _ = try editor.request("configurationDone")
        _ = try stopped(editor)
        let seen = try value(editor, "m.n .. ' ' .. state.count")
        XCTAssertNotNil(seen)
        _ = try editor.request("next", ["threadId": 1])
        _ = try stopped(editor)
        let back = try editor.request("stepBack", ["threadId": 1])
        XCTAssertEqual(back["success"] as? Bool, true, "\(back)")
        XCTAssertEqual(try stopped(editor)["reason"] as? String, "step")
        XCTAssertEqual(try line(editor), added)
        XCTAssertEqual(try value(editor, "m.n .. ' ' .. state.count"), seen, "the same run, at the same step")
        let printed = try finished(editor, process, output, clearing: source)
        XCTAssertEqual(process.terminationStatus, 0, printed)
        XCTAssertTrue(printed.contains("1 passed, 0 failed"), printed)
    }

    /// The same in `moonflow replay --debug` of a run recorded on the real clock: the replay goes
    /// back exactly, and still finds every event as recorded.
    func testGoingBackInAReplayComesBackExactlyAndTheReplayIsStillIdentical() throws {
        let recording = folder.appendingPathComponent("ledger.jsonl").path
        _ = try printed(by: ["run", "ledger", "--actions", "actions.jsonl", "--record", recording])
        let (process, output, editor) = try stoppedAtSecondHit(
            ["replay", recording, "--debug", "127.0.0.1:0", "--debug-wait"], breakpoints: [Line.before])
        defer { if process.isRunning { process.terminate() } }
        XCTAssertEqual(try value(editor, "m.n"), "7")
        XCTAssertEqual(try value(editor, "seen"), "2")

        let back = try editor.request("reverseContinue", ["threadId": 1])
        XCTAssertEqual(back["success"] as? Bool, true, "\(back)")
        XCTAssertEqual(try stopped(editor)["reason"] as? String, "breakpoint")
        XCTAssertEqual(try value(editor, "m.n"), "5", "the first action's hit")
        XCTAssertEqual(try value(editor, "seen"), "1")
        _ = try editor.request("next", ["threadId": 1])
        _ = try stopped(editor)
        XCTAssertEqual(try line(editor), Line.total)
        _ = try editor.request("stepBack", ["threadId": 1])
        XCTAssertEqual(try stopped(editor)["reason"] as? String, "step")
        XCTAssertEqual(try line(editor), Line.before, "the line before")
        XCTAssertEqual(try value(editor, "state.total"), "0")

        let printed = try finished(editor, process, output)
        XCTAssertEqual(process.terminationStatus, 0, printed)
        XCTAssertEqual(printed, "replay \(recording): identical (3 inputs, 4 states)\n")
    }

    /// A replay whose repository calls are answered from the recording: going back answers them
    /// again from the start of the recording, each after its own action, and the replay stays identical.
    func testGoingBackInAReplayAnswersTheRepositoryFromTheRecordingAgain() throws {
        let users = folder.appendingPathComponent("users")
        try FileManager.default.copyItem(at: Moonflow.root.appendingPathComponent("plugins/users"), to: users)
        let source = users.appendingPathComponent("init.lua").path
        let listed =
            try XCTUnwrap(
                try String(contentsOfFile: source, encoding: .utf8).components(separatedBy: "\n").firstIndex {
                    $0.contains("state.users, state.error = m.users, nil")
                }) + 1
        let recording = folder.appendingPathComponent("users.jsonl").path
        let actions = Moonflow.root.appendingPathComponent("plugins/users/golden/crud_by_id.in.jsonl").path
        _ = try printed(by: ["run", "users", "--actions", actions, "--record", recording])
        let (process, output, _, editor) = try started(["replay", recording, "--debug", "127.0.0.1:0", "--debug-wait"])
        defer { if process.isRunning { process.terminate() } }
        let capabilities = try editor.request("initialize")["body"] as? [String: Any]
        XCTAssertEqual(capabilities?["supportsStepBack"] as? Bool, true)
        _ = try editor.request("attach", ["token": editor.token])
        _ = try editor.request("setBreakpoints", ["source": ["path": source], "breakpoints": [["line": listed]]])
        _ = try editor.request("configurationDone")
        // Each list the repository answered, as the breakpoint saw it (the order the answers
        // came in on the real clock is the recording's).
        let shown =
            "table.concat((function() local t = {} for _, u in ipairs(m.users) do t[#t + 1] = u.name end return t end)(), ',')"
        var lists: [String?] = []
        for _ in 0..<3 {
            _ = try stopped(editor)
            lists.append(try value(editor, shown))
            _ = try editor.request("continue", ["threadId": 1])
        }
        _ = try stopped(editor)
        XCTAssertEqual(lists.count, 3)
        XCTAssertTrue(lists.contains { $0?.contains("Barbara") ?? false }, "the add's answer: \(lists)")
        let back = try editor.request("reverseContinue", ["threadId": 1])
        XCTAssertEqual(back["success"] as? Bool, true, "\(back)")
        _ = try stopped(editor)
        XCTAssertEqual(try value(editor, shown), lists[2], "the third answer again, from the recording")
        XCTAssertEqual(try value(editor, "m.type"), "\"list\"")
        let printed = try finished(editor, process, output, clearing: source)
        XCTAssertEqual(process.terminationStatus, 0, printed)
        XCTAssertTrue(printed.hasPrefix("replay \(recording): identical"), printed)
    }

    /// After going back, the run drives a new host: a call of it that blocks where no hook
    /// reaches is found stuck and left behind, as in the first host, and the run goes on.
    func testAStuckCallAfterGoingBackIsFoundAndTheRunGoesOn() throws {
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("blocking"), withIntermediateDirectories: true)
        let blocking = folder.appendingPathComponent("blocking/init.lua").path
        try """
        local mf = require "moonflow"
        return mf.feature {
          name = "blocking", initial = { count = 0 },
          actions = { bump = {}, block = {} }, mutations = { bump = {} },
          handle = function(a)
            if a.type == "block" then os.execute("exec sleep 8 </dev/null >/dev/null 2>&1") end
            return { type = "bump" }
          end,
          reduce = function(s)
            s.count = s.count + 1
            return s
          end,
        }
        """.write(toFile: blocking, atomically: true, encoding: .utf8)
        try [#"{"type":"bump"}"#, #"{"type":"bump"}"#, #"{"type":"block"}"#, #"{"type":"bump"}"#]
            .joined(separator: "\n").appending("\n").write(toFile: actions, atomically: true, encoding: .utf8)
        let (process, output, _, editor) = try started(
            [
                "run", "blocking", "--clock", "virtual", "--actions", "actions.jsonl", "--format", "jsonl",
                "--time-limit", "200", "--debug", "127.0.0.1:0", "--debug-wait",
            ])
        defer { if process.isRunning { process.terminate() } }
        _ = try editor.request("initialize")
        _ = try editor.request("attach", ["token": editor.token])
        _ = try editor.request("setBreakpoints", ["source": ["path": blocking], "breakpoints": [["line": 10]]])
        _ = try editor.request("configurationDone")
        _ = try stopped(editor)
        _ = try editor.request("continue", ["threadId": 1])
        _ = try stopped(editor)
        let back = try editor.request("reverseContinue", ["threadId": 1])
        XCTAssertEqual(back["success"] as? Bool, true, "\(back)")
        _ = try stopped(editor)
        _ = try editor.request("setBreakpoints", ["source": ["path": blocking], "breakpoints": [[String: Any]]()])
        let started = Date()
        _ = try editor.request("continue", ["threadId": 1])
        // Read up to the last state (the end of the output waits for the blocking child, which
        // keeps a copy of the pipe this test gave the run).
        var printed = ""
        while !printed.contains(#""count":3"#) {
            let more = output.fileHandleForReading.availableData
            if more.isEmpty { break }
            printed += String(decoding: more, as: UTF8.self)
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 7, "found stuck before the 8 s call returned: \(printed)")
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 1, printed)
        XCTAssertTrue(printed.contains("cannot be interrupted"), printed)
        XCTAssertTrue(printed.contains(#""count":3"#), "the bump after the stuck call counted: \(printed)")
    }

    /// An edit saved while stopped: going back would run other code, so it is refused naming
    /// the file; with the edit undone it goes back as before.
    func testAnEditSinceTheRunStartedRefusesGoingBackUntilItIsUndone() throws {
        let run = ["run", "ledger", "--clock", "virtual", "--actions", "actions.jsonl", "--format", "jsonl"]
        let (process, _, editor) = try stoppedAtSecondHit(
            run + ["--debug", "127.0.0.1:0", "--debug-wait"], breakpoints: [Line.before])
        defer { if process.isRunning { process.terminate() } }
        try (Self.plugin + "-- an edit\n").write(toFile: file, atomically: true, encoding: .utf8)
        for command in ["stepBack", "reverseContinue", "restartFrame"] {
            let refused = try editor.request(command, ["threadId": 1, "frameId": 1])
            XCTAssertEqual(refused["success"] as? Bool, false, command)
            let message = refused["message"] as? String ?? ""
            XCTAssertTrue(message.contains("ledger/init.lua changed since the run started"), message)
            XCTAssertTrue(message.contains("undo the edit") && message.contains("start the run again"), message)
        }
        try Self.plugin.write(toFile: file, atomically: true, encoding: .utf8)
        let back = try editor.request("reverseContinue", ["threadId": 1])
        XCTAssertEqual(back["success"] as? Bool, true, "\(back)")
        _ = try stopped(editor)
        XCTAssertEqual(try value(editor, "m.n"), "5")
        _ = try editor.request("disconnect")
        process.waitUntilExit()
    }

    /// A plugin that reads something a re-run does not repeat (here a data file, changed while
    /// stopped): the re-run takes another path, and the stop says so instead of showing a
    /// point the run never reached.
    func testAReRunThatTakesAnotherPathStopsSayingSo() throws {
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("reader"), withIntermediateDirectories: true)
        let reader = folder.appendingPathComponent("reader/init.lua").path
        try """
        local mf = require "moonflow"
        return mf.feature {
          name = "reader", initial = { n = 0 }, actions = { add = {} }, mutations = { added = {} },
          handle = function() return { type = "added" } end,
          reduce = function(s)
            local f = io.open("times.txt")
            local times = tonumber(f:read("a"))
            f:close()
            for _ = 1, times do
              s.n = s.n + 1
            end
            return s
          end,
        }
        """.write(toFile: reader, atomically: true, encoding: .utf8)
        let times = folder.appendingPathComponent("times.txt")
        try "2".write(to: times, atomically: true, encoding: .utf8)
        try #"{"type":"add"}\#n{"type":"add"}\#n"#.write(toFile: actions, atomically: true, encoding: .utf8)
        let (process, _, _, editor) = try started(
            [
                "run", "reader", "--clock", "virtual", "--actions", "actions.jsonl", "--debug", "127.0.0.1:0",
                "--debug-wait",
            ])
        defer { if process.isRunning { process.terminate() } }
        _ = try editor.request("initialize")
        _ = try editor.request("attach", ["token": editor.token])
        _ = try editor.request("setBreakpoints", ["source": ["path": reader], "breakpoints": [["line": 12]]])
        _ = try editor.request("configurationDone")
        _ = try stopped(editor)
        _ = try editor.request("continue", ["threadId": 1])
        _ = try stopped(editor)
        XCTAssertEqual(try value(editor, "s.n"), "4")
        try "3".write(to: times, atomically: true, encoding: .utf8)
        let back = try editor.request("stepBack", ["threadId": 1])
        XCTAssertEqual(back["success"] as? Bool, true, "\(back)")
        let stop = try stopped(editor)
        XCTAssertEqual(stop["reason"] as? String, "exception", "\(stop)")
        let text = stop["text"] as? String ?? ""
        XCTAssertTrue(text.hasPrefix("going back could not come back exactly"), text)
        XCTAssertTrue(text.contains("pairs") && text.contains("a file or variable it reads"), text)
        _ = try editor.request("disconnect")
        process.waitUntilExit()
    }

    /// `--debug-history N`: while the run has kept at most N inputs it goes back; past them it
    /// lets them go, and going back is refused with the bound, the line and what to do; the
    /// run's output is as without the debugger.
    func testPastItsHistoryTheRunLetsItGoAndGoingBackIsRefusedWithTheBound() throws {
        let lines = (1...6).map { #"{"type":"add","n":\#($0)}"# }.joined(separator: "\n") + "\n"
        try lines.write(toFile: actions, atomically: true, encoding: .utf8)
        let run = ["run", "ledger", "--clock", "virtual", "--actions", "actions.jsonl", "--format", "jsonl"]
        let plain = try printed(by: run)
        let (process, output, editor) = try stoppedAtSecondHit(
            run + ["--debug", "127.0.0.1:0", "--debug-wait", "--debug-history", "4"], breakpoints: [Line.total])
        defer { if process.isRunning { process.terminate() } }
        XCTAssertEqual(try value(editor, "m.n"), "2")
        let back = try editor.request("stepBack", ["threadId": 1])
        XCTAssertEqual(back["success"] as? Bool, true, "within the history: \(back)")
        _ = try stopped(editor)
        XCTAssertEqual(try line(editor), Line.before)
        for _ in 0..<5 {  // the second action's hit again, then on to the sixth's
            _ = try editor.request("continue", ["threadId": 1])
            _ = try stopped(editor)
        }
        XCTAssertEqual(try value(editor, "m.n"), "6")
        let refused = try editor.request("stepBack", ["threadId": 1])
        XCTAssertEqual(refused["success"] as? Bool, false)
        let message = refused["message"] as? String ?? ""
        XCTAssertTrue(message.hasPrefix("stepBack cannot go back any more"), message)
        XCTAssertTrue(message.contains("at most 4 inputs") && message.contains("at input line 5"), message)
        XCTAssertTrue(message.contains("--debug-history") && message.contains("moonflow replay"), message)
        let frames = try stack(editor)
        XCTAssertEqual(frames.first?["canRestart"] as? Bool, false)
        let travelled = try finished(editor, process, output)
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertEqual(travelled, plain)
    }

    /// `--debug-history` without `--debug`, or out of its range, is refused before anything runs.
    func testDebugHistoryIsCheckedBeforeTheRun() throws {
        for (arguments, expected) in [
            (["--debug-history", "5"], "add --debug"),
            (["--debug", "0", "--debug-history", "0"], "from 1 to 100000000 (got 0)"),
        ] {
            let process = Process()
            process.executableURL = try Moonflow.binary()
            process.arguments = ["run", "ledger", "--clock", "virtual", "--actions", "actions.jsonl"] + arguments
            process.currentDirectoryURL = folder
            let errors = Pipe()
            process.standardOutput = FileHandle.nullDevice
            process.standardError = errors
            try process.run()
            let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            XCTAssertNotEqual(process.terminationStatus, 0, text)
            XCTAssertTrue(text.contains(expected), text)
        }
    }

    /// On the real clock the run cannot be repeated: the requests are refused with how to get one that can.
    func testGoingBackOnTheRealClockIsRefusedWithHowToRecordAndReplay() throws {
        let (process, _, _, editor) = try started(
            ["run", "ledger", "--actions", "actions.jsonl", "--debug", "127.0.0.1:0", "--debug-wait"])
        defer { if process.isRunning { process.terminate() } }
        try attach(editor, breakpoints: [Line.before])
        _ = try stopped(editor)
        let frames = try stack(editor)
        XCTAssertFalse(frames.isEmpty)
        XCTAssertTrue(frames.allSatisfy { $0["canRestart"] as? Bool == false }, "\(frames)")
        for command in ["stepBack", "reverseContinue", "restartFrame"] {
            let refused = try editor.request(command, ["threadId": 1, "frameId": 1])
            XCTAssertEqual(refused["success"] as? Bool, false)
            let message = refused["message"] as? String ?? ""
            XCTAssertTrue(message.hasPrefix(command), message)
            XCTAssertTrue(message.contains("--clock virtual"), message)
            XCTAssertTrue(message.contains("--record"), message)
            XCTAssertTrue(message.contains("moonflow replay"), message)
        }
        _ = try editor.request("disconnect")
        process.waitUntilExit()
    }
}
