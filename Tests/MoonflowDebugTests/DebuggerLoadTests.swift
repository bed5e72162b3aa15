import Foundation
import LuaKit
@testable import MoonflowDebug
import MoonflowHost
import MoonflowHostTools
import XCTest

/// The debugger under ordinary editor use over many actions: a log point on every action,
/// an editor that stops reading, a large table shown again and again. Each figure holds on
/// a loaded machine: nothing here is timed. MOONFLOW_LOAD_SCALE divides the counts (the
/// sanitizer runs set it).
final class DebuggerLoadTests: XCTestCase {
    private var scale: Int { max(1, Int(ProcessInfo.processInfo.environment["MOONFLOW_LOAD_SCALE"] ?? "") ?? 1) }

    /// Line 12 is reduce's `return state`: a log point there runs on every action.
    private static let plugin = """
        local mf = require "moonflow"
        local rows = {}
        for i = 1, 2000 do rows[i] = { id = i, name = "row " .. i, tags = { "a", "b", "c" } } end
        return mf.feature {
          name = "rows",
          initial = { count = 0 },
          actions = { add = {} },
          mutations = { added = {} },
          handle = function() return { type = "added" } end,
          reduce = function(state, m)
            state.count = state.count + 1
            return state
          end,
        }
        """
    private static let logLine = 12

    private var folder: URL!
    private var file: String { folder.appendingPathComponent("plugins/rows/init.lua").path }

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-load-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("plugins/rows"), withIntermediateDirectories: true)
        try Self.plugin.write(toFile: file, atomically: true, encoding: .utf8)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: folder) }

    /// A feature whose host a debugger serves, an admitted editor, and a log point on
    /// reduce's last line printing `message`.
    private func logged(
        _ message: String, memoryLimitMB: Int? = 512
    ) throws -> (FeatureHost, RunningFeature, DebugServer, EditorClient) {
        let host = try FeatureHost(
            configuration: .init(
                searchPaths: [folder.appendingPathComponent("plugins").path],
                timeLimitMs: 1000, memoryLimitMB: memoryLimitMB, clock: .real))
        let server = try DebugServer(host: "127.0.0.1", port: 0, name: "rows") { _ in }
        XCTAssertTrue(server.controller.serve(host.lua))
        let editor = try EditorClient(
            port: Int(server.address.split(separator: ":").last ?? "") ?? 0, receiveBuffer: 64 << 10)
        _ = try editor.request("initialize")
        try editor.attach(token: server.access.token)
        let placed = try editor.request(
            "setBreakpoints",
            [
                "source": ["path": LuaValue(file)],
                "breakpoints": [["line": LuaValue(Self.logLine), "logMessage": LuaValue(message)]],
            ])
        XCTAssertEqual(placed["body"]?["breakpoints"]?[0]?["line"]?.intValue, Int64(Self.logLine), "\(placed)")
        _ = try editor.request("configurationDone")
        let feature = try host.load("rows")
        feature.start()
        return (host, feature, server, editor)
    }

    private func sendAll(_ feature: RunningFeature, _ n: Int, from start: Int = 0) throws {
        for _ in 0..<n { try feature.send(["type": "add"]) }
        let give = Date().addingTimeInterval(300)
        while feature.state["count"]?.intValue != Int64(start + n), Date() < give {
            Thread.sleep(forTimeInterval: 0.01)
        }
        XCTAssertEqual(feature.state["count"]?.intValue, Int64(start + n), "every action reduced")
    }

    /// The Lua heap once the collector has run, read on the host's executor.
    private func heap(_ host: FeatureHost) -> Int {
        host.perform {
            host.lua.collectGarbage()
            return host.lua.memoryInUse
        }
    }

    /// Before, each hit pinned the table a log point showed for the life of the state: a
    /// `{m}` log point filled an 8 MB limit, and 5,000 of 12,000 actions failed.
    func testALogPointOnATableKeepsTheHeapFlatOverAHundredThousandActions() throws {
        let (host, feature, server, editor) = try logged("mutation {m}", memoryLimitMB: 8)
        defer { server.close() }
        final class Failures: @unchecked Sendable { let lock = NSLock(); var count = 0 }
        let failures = Failures()
        let watching = feature.failures.observe(value: { _ in failures.lock.withLock { failures.count += 1 } })
        defer { _ = watching }
        let n = 100_000 / scale
        try sendAll(feature, n / 10)
        let early = heap(host)
        try sendAll(feature, n - n / 10, from: n / 10)
        let late = heap(host)
        XCTAssertEqual(failures.lock.withLock { failures.count }, 0, "no action failed")
        XCTAssertLessThan(late - early, 256 << 10, "heap \(early) after \(n / 10) actions, \(late) after \(n)")
        XCTAssertEqual(try editor.request("threads")["success"]?.boolValue, true)
    }

    /// Before, evaluate's limit was a count hook that a `pcall` loop or one long C call
    /// defeated, and with the feature's own limit held while stopped the run spun forever.
    func testARunawayEvaluateEndsWithinItsLimitAndTheFeatureGoesOn() throws {
        let (_, feature, server, editor) = try logged("", memoryLimitMB: 64)
        defer { server.close() }
        XCTAssertEqual(
            try editor.request(
                "setBreakpoints",
                [
                    "source": ["path": LuaValue(file)],
                    "breakpoints": [["line": LuaValue(Self.logLine)]],
                ])["success"]?.boolValue, true)
        try feature.send(["type": "add"])
        _ = try editor.event("stopped")
        for expression in [
            "(function() while true do pcall(function() while true do end end) end end)()",
            "(function() while true do xpcall(function() while true do end end, function() while true do end end) end end)()",
            "string.rep('a', 200000):find('.-.-.-.-b')",
        ] {
            let answer = try editor.request("evaluate", ["expression": LuaValue(expression), "frameId": 1])
            XCTAssertEqual(answer["success"]?.boolValue, false, expression)
            XCTAssertTrue(
                answer["message"]?.stringValue?.contains("evaluate ran longer than 2000 ms and was stopped") == true,
                "\(expression): \(answer)")
        }
        XCTAssertEqual(
            try editor.request("evaluate", ["expression": "state.count", "frameId": 1])["body"]?["result"]?.stringValue,
            "1")
        _ = try editor.request("setBreakpoints", ["source": ["path": LuaValue(file)], "breakpoints": []])
        _ = try editor.request("continue", ["threadId": 1])
        try sendAll(feature, 1, from: 1)
    }

    /// What the editor opens while stopped (variables, a table evaluated) is let go when the
    /// thread goes on: stopping 300 times on a large table keeps nothing of the stops before.
    func testTablesOpenedWhileStoppedAreLetGoWhenTheThreadGoesOn() throws {
        let (host, feature, server, editor) = try logged("", memoryLimitMB: 64)
        defer { server.close() }
        // A plain breakpoint on the same line (an empty log message stops as one).
        XCTAssertEqual(
            try editor.request(
                "setBreakpoints",
                [
                    "source": ["path": LuaValue(file)],
                    "breakpoints": [["line": LuaValue(Self.logLine)]],
                ])["success"]?.boolValue, true)
        var sizes: [Int] = []
        for i in 1...300 {
            try feature.send(["type": "add"])
            _ = try editor.event("stopped")
            // A large table made for the look, and the frame's locals: each pinned before.
            let big = try editor.request(
                "evaluate",
                [
                    "expression": "(function() local t = {} for k = 1, 2000 do t[k] = {k} end return t end)()",
                    "frameId": 1,
                ])
            XCTAssertGreaterThan(big["body"]?["variablesReference"]?.intValue ?? 0, 0, "a table opens")
            let scopes = try editor.request("scopes", ["frameId": 1])
            _ = try editor.request(
                "variables", ["variablesReference": scopes["body"]?["scopes"]?[0]?["variablesReference"] ?? 0])
            _ = try editor.request("continue", ["threadId": 1])
            if i == 30 || i == 300 { sizes.append(heap(host)) }
        }
        XCTAssertEqual(feature.state["count"]?.intValue, 300)
        XCTAssertLessThan(sizes[1] - sizes[0], 1 << 20, "heap after 30 stops \(sizes[0]), after 300 \(sizes[1])")
    }

    /// Before, log-point output was written to the socket from the Lua thread: once the
    /// socket's buffer filled, the feature froze mid-reduce until the editor read.
    func testAnEditorThatStopsReadingDoesNotHoldTheFeature() throws {
        let (_, feature, server, editor) = try logged("count is {state.count} of {m.type}")
        defer { server.close() }
        // More lines than the outbox, the debugger's send buffer and the editor's receive
        // buffer hold together (about 4,000 here), however the load is scaled.
        let n = max(8_000, 16_000 / scale)
        try sendAll(feature, n)  // the editor reads nothing meanwhile
        // Reading again: every line is either written or counted in a notice, exactly once.
        var lines = 0, dropped = 0, notices = 0
        while lines + dropped < n {
            let message = try editor.next()
            guard message["event"]?.stringValue == "output", let text = message["body"]?["output"]?.stringValue else {
                continue
            }
            if text.contains("log-point output dropped") {
                XCTAssertTrue(text.contains("the editor did not read them in time"), text)
                dropped += Int(text.split(separator: " ")[1]) ?? 0
                notices += 1
            } else {
                XCTAssertTrue(text.hasPrefix("count is "), text)
                lines += 1
            }
        }
        XCTAssertEqual(lines + dropped, n)
        XCTAssertGreaterThan(notices, 0, "the bound was reached: lines were dropped, not waited for")
        XCTAssertEqual(try editor.request("threads")["success"]?.boolValue, true, "the session goes on")
    }
}
