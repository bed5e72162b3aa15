import Foundation
import XCTest

/// `moonflow run --watch` on the built binary, with real file edits and real inotify events.
final class WatchTests: XCTestCase {
    private var scratch: URL!

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("moonflow-watch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: scratch.appendingPathComponent("plugins/counter"), withIntermediateDirectories: true)
        try write(step: 1)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: scratch) }

    private var initFile: URL { scratch.appendingPathComponent("plugins/counter/init.lua") }

    private func source(step: Int, broken: Bool = false) -> String {
        """
        local mf = require "moonflow"
        return mf.feature {
          name = "counter",
          initial = { count = 0 },
          actions = { add = {} },
          mutations = { added = {} },
          handle = function() return { type = "added" } end,
          reduce = function(state) state.count = state.count + \(step) return state end,
        }\(broken ? "\n)" : "")
        """
    }

    private func write(step: Int, broken: Bool = false) throws {
        try source(step: step, broken: broken).write(to: initFile, atomically: false, encoding: .utf8)
    }

    func testAFileClosedAfterItsReloadIsNotReloadedAgain() throws {
        let run = try Session(
            ["run", "plugins/counter", "--watch", "--format", "jsonl", "--actions", "-"], in: scratch)
        defer { run.kill() }
        try run.waitFor(#""state":{"count":0}"#)
        try write(step: 10)
        try run.waitFor(#""event":"reload""#)
        // What a write's close looks like when a busy machine parts it from the write: an
        // event for the file with nothing in it changed.
        try FileHandle(forWritingTo: initFile).close()
        Thread.sleep(forTimeInterval: 0.5)
        run.send(#"{"type":"add"}"#)
        try run.waitFor(#""state":{"count":10}"#)
        XCTAssertEqual(
            run.lines.filter { $0.contains(#""event":"reload""#) }.count, 1, run.lines.joined(separator: "\n"))
    }

    func testAStuckCallIsLeftBehindAndTheRebuiltFeatureStillReloadsOnSave() throws {
        // `block` calls a C function that blocks past the watchdog's last resort (limit 200 ms
        // plus two seconds): nothing inside Lua can stop it.
        func blocking(step: Int) -> String {
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "counter", initial = { count = 0 },
              actions = { add = {}, block = {} }, mutations = { added = {} },
              handle = function(a)
                if a.type == "block" then os.execute("exec sleep 8 </dev/null >/dev/null 2>&1") end
                return { type = "added" }
              end,
              reduce = function(state) state.count = state.count + \(step) return state end,
            }
            """
        }
        try blocking(step: 1).write(to: initFile, atomically: false, encoding: .utf8)
        let run = try Session(
            ["run", "plugins/counter", "--watch", "--format", "jsonl", "--actions", "-", "--time-limit", "200"],
            in: scratch)
        defer { run.kill() }
        try run.waitFor(#""state":{"count":0}"#)
        run.send(#"{"type":"add"}"#)
        try run.waitFor(#""state":{"count":1}"#)
        run.send(#"{"type":"block"}"#)
        try run.waitFor("cannot be interrupted")
        // The rebuilt feature starts from the last state and takes actions...
        run.send(#"{"type":"add"}"#)
        try run.waitFor(#""state":{"count":2}"#)
        // ...and a save reloads it, while the stuck call still blocks.
        try blocking(step: 10).write(to: initFile, atomically: false, encoding: .utf8)
        try run.waitFor(#""event":"reload""#)
        run.send(#"{"type":"add"}"#)
        try run.waitFor(#""state":{"count":12}"#)
    }

    /// A parent that starts `moonflow` from a thread blocking signals (a GCD or Swift
    /// concurrency thread: the child inherits the mask) can still end it with SIGTERM: a
    /// watching run, and `moonflow serve` (which becomes `moonflow-inspector serve`).
    func testSIGTERMEndsMoonflowStartedFromAThreadThatBlocksSignals() throws {
        let folder: URL = scratch
        let run = try onAWorkerThread {
            try Session(["run", "plugins/counter", "--watch", "--format", "jsonl", "--actions", "-"], in: folder)
        }
        defer { run.kill() }
        try run.waitFor(#""state":{"count":0}"#)
        XCTAssertEqual(try run.terminate(), 0)

        let serve = try onAWorkerThread { try Session(["serve", "plugins", "--format", "jsonl"], in: folder) }
        defer { serve.kill() }
        try serve.waitFor(#""event":"serve""#)
        XCTAssertEqual(try serve.terminate(), 0, "stopped, as the run is")
    }

    /// A script that starts `moonflow` in its background leaves SIGINT ignored (a shell sets
    /// SIG_IGN for a background job, and the program inherits it): `serve` ends on it as a
    /// watching run does, with status 0. Before, `serve` took the default action, which an
    /// ignored signal never gets: it ran on after the script's Ctrl-C.
    func testSIGINTEndsRunAndServeStartedWithSIGINTIgnored() throws {
        let folder: URL = scratch
        let run = try Session(
            ["run", "plugins/counter", "--watch", "--format", "jsonl", "--actions", "-"], in: folder,
            ignoringSIGINT: true)
        defer { run.kill() }
        try run.waitFor(#""state":{"count":0}"#)
        XCTAssertEqual(try run.interrupt(), 0)

        let serve = try Session(["serve", "plugins", "--format", "jsonl"], in: folder, ignoringSIGINT: true)
        defer { serve.kill() }
        try serve.waitFor(#""event":"serve""#)
        XCTAssertEqual(try serve.interrupt(), 0, "stopped by SIGINT")
    }

    /// Runs `body` on a GCD worker thread (which blocks every signal it can), not this one.
    private func onAWorkerThread<T>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        let result = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var blocked = sigset_t()
            pthread_sigmask(SIG_SETMASK, nil, &blocked)
            XCTAssertEqual(sigismember(&blocked, SIGTERM), 1, "a worker thread blocks SIGTERM")
            result.value = Result { try body() }
            done.signal()
        }
        done.wait()  // the semaphore orders the write before this read
        return try result.value!.get()
    }

    func testEditsReloadWithTheStateKeptUntilSIGTERM() throws {
        let run = try Session(
            ["run", "plugins/counter", "--watch", "--format", "jsonl", "--actions", "-"], in: scratch)
        defer { run.kill() }
        try run.waitFor(#""state":{"count":0}"#)
        run.send(#"{"type":"add"}"#)
        try run.waitFor(#""state":{"count":1}"#)

        // Written in place.
        try write(step: 10)
        try run.waitFor(#""event":"reload""#)
        XCTAssertTrue(run.lines.last!.contains(#""files":["init.lua"]"#), run.lines.last!)
        run.send(#"{"type":"add"}"#)
        try run.waitFor(#""state":{"count":11}"#)

        // A syntax error: an error event with file:line, the old code keeps running.
        try write(step: 100, broken: true)
        try run.waitFor(#""event":"error""#)
        XCTAssertTrue(run.lines.last!.contains(#""where":"plugins/counter/init.lua:10""#), run.lines.last!)
        run.send(#"{"type":"add"}"#)
        try run.waitFor(#""state":{"count":21}"#)

        // Saved as vim does: a new file renamed over the old one.
        let temp = scratch.appendingPathComponent("plugins/counter/.init.lua.swp")
        try source(step: 100).write(to: temp, atomically: false, encoding: .utf8)
        _ = rename(temp.path, initFile.path)
        try run.waitFor(#""event":"reload""#, after: 1)
        run.send(#"{"type":"add"}"#)
        try run.waitFor(#""state":{"count":121}"#)

        // Deleted, then created again.
        try FileManager.default.removeItem(at: initFile)
        Thread.sleep(forTimeInterval: 0.05)
        try write(step: 1000)
        try run.waitFor(#""event":"reload""#, after: 2)
        run.send(#"{"type":"add"}"#)
        try run.waitFor(#""state":{"count":1121}"#)

        let reloads = run.lines.filter { $0.contains(#""event":"reload""#) }
        XCTAssertEqual(reloads.count, 3, "one reload per save: \(reloads)")
        // The input ended long ago: --watch keeps running until a signal; an error was reported, so 1.
        run.closeInput()
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertTrue(run.isRunning)
        XCTAssertEqual(try run.terminate(), 1)
    }

    /// Saving a spec is not saving the plugin: no reload (before, each spec save reloaded
    /// the plugin, naming the spec file as what changed).
    func testSavingASpecDoesNotReloadThePlugin() throws {
        let run = try Session(
            ["run", "plugins/counter", "--watch", "--format", "jsonl", "--actions", "-"], in: scratch)
        defer { run.kill() }
        try run.waitFor(#""state":{"count":0}"#)
        let spec = scratch.appendingPathComponent("plugins/counter/spec")
        try FileManager.default.createDirectory(at: spec, withIntermediateDirectories: true)
        try "-- a spec\n".write(to: spec.appendingPathComponent("counter_spec.lua"), atomically: false, encoding: .utf8)
        try "return {}\n".write(to: spec.appendingPathComponent("helpers.lua"), atomically: false, encoding: .utf8)
        Thread.sleep(forTimeInterval: 0.5)
        try write(step: 10)
        try run.waitFor(#""event":"reload""#)
        run.send(#"{"type":"add"}"#)
        try run.waitFor(#""state":{"count":10}"#)
        let reloads = run.lines.filter { $0.contains(#""event":"reload""#) }
        XCTAssertEqual(reloads.count, 1, run.lines.joined(separator: "\n"))
        XCTAssertTrue(reloads.first?.contains(#""files":["init.lua"]"#) == true, reloads.joined(separator: "\n"))
    }

    func testASaveRightAfterTheFirstStateReloads() throws {
        for attempt in 1...3 {
            try write(step: 1)
            let run = try Session(
                ["run", "plugins/counter", "--watch", "--format", "jsonl", "--actions", "-"], in: scratch)
            defer { run.kill() }
            try run.waitFor(#""state":{"count":0}"#)
            try write(step: 2)
            try run.waitFor(#""event":"reload""#, timeout: 5)
            run.send(#"{"type":"add"}"#)
            try run.waitFor(#""state":{"count":2}"#)
            XCTAssertFalse(run.lines.contains { $0.contains(#""event":"error""#) }, "attempt \(attempt): \(run.lines)")
        }
    }

    func testAFileWrittenInTwoChunksReloadsWithoutASpuriousError() throws {
        let run = try Session(
            ["run", "plugins/counter", "--watch", "--format", "jsonl", "--actions", "-"], in: scratch)
        defer { run.kill() }
        try run.waitFor(#""state":{"count":0}"#)
        let bytes = Data(source(step: 5).utf8)
        let handle = try FileHandle(forWritingTo: initFile)
        try handle.truncate(atOffset: 0)
        handle.write(bytes.prefix(bytes.count / 2))
        Thread.sleep(forTimeInterval: 0.02)
        handle.write(bytes.suffix(from: bytes.count / 2))
        try handle.close()
        try run.waitFor(#""event":"reload""#)
        run.send(#"{"type":"add"}"#)
        try run.waitFor(#""state":{"count":5}"#)
        XCTAssertFalse(run.lines.contains { $0.contains(#""event":"error""#) }, "\(run.lines)")
    }

    func testThePluginFolderDeletedAndMadeAgainStillReloads() throws {
        let run = try Session(
            ["run", "plugins/counter", "--watch", "--format", "jsonl", "--actions", "-"], in: scratch)
        defer { run.kill() }
        try run.waitFor(#""state":{"count":0}"#)
        let folder = initFile.deletingLastPathComponent()
        try FileManager.default.removeItem(at: folder)
        Thread.sleep(forTimeInterval: 0.1)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try write(step: 3)
        try run.waitFor(#""event":"reload""#)
        run.send(#"{"type":"add"}"#)
        try run.waitFor(#""state":{"count":3}"#)
        // And later saves too.
        try write(step: 30)
        try run.waitFor(#""event":"reload""#, after: 1)
        run.send(#"{"type":"add"}"#)
        try run.waitFor(#""state":{"count":33}"#)
    }

    func testSIGINTEndsACleanRunWithZero() throws {
        let run = try Session(
            ["run", "plugins/counter", "--watch", "--format", "jsonl", "--actions", "-"], in: scratch)
        defer { run.kill() }
        try run.waitFor(#""state":{"count":0}"#)
        run.closeInput()
        XCTAssertEqual(try run.interrupt(), 0)
    }

    func testAFinalizerThatLoopsIsStoppedAtTheReloadAndTheRunKeepsServing() throws {
        // Tests/Fixtures/plugins/gc-loop: the dropped object's __gc loops; the collector runs
        // whole cycles at every allocation, and the new file gives the parser work enough to reach it.
        let fixture = try String(
            contentsOf: Moonflow.root.appendingPathComponent("Tests/Fixtures/plugins/gc-loop/init.lua"), encoding: .utf8
        )
        func looping(padding: Int) -> String {
            fixture.replacingOccurrences(
                of: "--[[padding]]", with: (0..<padding).map { "\"pad\($0)\"" }.joined(separator: ", "))
        }
        let file = scratch.appendingPathComponent("plugins/gc/init.lua")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try looping(padding: 0).write(to: file, atomically: false, encoding: .utf8)
        let run = try Session(
            ["run", "plugins/gc", "--watch", "--time-limit", "300", "--format", "jsonl", "--actions", "-"], in: scratch)
        defer { run.kill() }
        try run.waitFor(#""state":{"n":0}"#)
        run.send(#"{"type":"drop"}"#)
        try run.waitFor(#""type":"drop""#)
        try looping(padding: 40_000).write(to: file, atomically: false, encoding: .utf8)
        try run.waitFor("time limit of 300 ms exceeded", timeout: 20)
        run.send(#"{"type":"bump"}"#)
        run.send(#"{"type":"bump"}"#)
        try run.waitFor(#""state":{"n":"#, timeout: 20)
        XCTAssertTrue(run.isRunning)
    }

    func testWatchNeedsTheRealClock() throws {
        let result = try Moonflow.run(["run", "plugins/counter", "--watch", "--clock", "virtual"], in: scratch)
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.stderr.contains("--watch runs on the real clock"), result.stderr)
    }
}

/// A running `moonflow` whose output lines are read as they come.
final class Session: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let lock = NSLock()
    private var buffer = ""
    private var _lines: [String] = []

    /// - Parameter ignoringSIGINT: started with SIGINT ignored, as a script's background job is
    ///   (through sh, which then becomes `moonflow`).
    init(_ arguments: [String], in directory: URL, ignoringSIGINT: Bool = false) throws {
        if ignoringSIGINT {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "trap '' INT; exec \"$@\"", "sh", try Moonflow.binary().path] + arguments
        } else {
            process.executableURL = try Moonflow.binary()
            process.arguments = arguments
        }
        process.currentDirectoryURL = directory
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        output.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            self.lock.withLock {
                self.buffer += String(decoding: data, as: UTF8.self)
                while let newline = self.buffer.firstIndex(of: "\n") {
                    self._lines.append(String(self.buffer[..<newline]))
                    self.buffer.removeSubrange(...newline)
                }
            }
        }
        try process.run()
    }

    var lines: [String] { lock.withLock { _lines } }
    var isRunning: Bool { process.isRunning }

    func send(_ line: String) { input.fileHandleForWriting.write(Data((line + "\n").utf8)) }
    func closeInput() { try? input.fileHandleForWriting.close() }

    /// Waits until more than `after` lines contain `text` (real time, up to 10 s).
    func waitFor(_ text: String, after: Int = 0, timeout: TimeInterval = 10) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if lines.filter({ $0.contains(text) }).count > after { return }
            Thread.sleep(forTimeInterval: 0.01)
        }
        throw WaitTimeout(text: text, lines: lines)
    }

    struct WaitTimeout: Error, CustomStringConvertible {
        let text: String
        let lines: [String]
        var description: String { "no line with \(text) within 10 s; output so far:\n\(lines.joined(separator: "\n"))" }
    }

    func terminate() throws -> Int32 { process.terminate(); return try wait() }
    func interrupt() throws -> Int32 { process.interrupt(); return try wait() }

    private func wait() throws -> Int32 {
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        guard !process.isRunning else {
            XCTFail("moonflow did not exit after the signal")
            process.terminate()
            process.waitUntilExit()
            return -1
        }
        return process.terminationStatus
    }

    func kill() { if process.isRunning { process.terminate() } }
}

/// A result handed from a worker thread to the test's (a semaphore orders the two).
private final class ResultBox<T>: @unchecked Sendable {
    var value: Result<T, any Error>?
}
