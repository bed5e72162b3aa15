import Foundation
import LuaKit
@testable import MoonflowDebug
import MoonflowHost
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
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("plugins/rows"), withIntermediateDirectories: true)
        try Self.plugin.write(toFile: file, atomically: true, encoding: .utf8)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: folder) }

    /// A feature whose host a debugger serves, an admitted editor, and a log point on
    /// reduce's last line printing `message`.
    private func logged(_ message: String, memoryLimitMB: Int? = 512) throws -> (FeatureHost, RunningFeature, DebugServer, EditorClient) {
        let host = try FeatureHost(configuration: .init(searchPaths: [folder.appendingPathComponent("plugins").path],
                                                        timeLimitMs: 1000, memoryLimitMB: memoryLimitMB, clock: .real))
        let server = try DebugServer(host: "127.0.0.1", port: 0, name: "rows") { _ in }
        XCTAssertTrue(server.controller.serve(host.lua))
        let editor = try EditorClient(port: Int(server.address.split(separator: ":").last ?? "") ?? 0, receiveBuffer: 64 << 10)
        _ = try editor.request("initialize")
        try editor.attach(token: server.access.token)
        let placed = try editor.request("setBreakpoints", ["source": ["path": LuaValue(file)],
                                                           "breakpoints": [["line": LuaValue(Self.logLine), "logMessage": LuaValue(message)]]])
        XCTAssertEqual(placed["body"]?["breakpoints"]?[0]?["line"]?.intValue, Int64(Self.logLine), "\(placed)")
        _ = try editor.request("configurationDone")
        let feature = try host.load("rows")
        feature.start()
        return (host, feature, server, editor)
    }

    private func sendAll(_ feature: RunningFeature, _ n: Int) throws {
        for _ in 0..<n { try feature.send(["type": "add"]) }
        let give = Date().addingTimeInterval(300)
        while feature.state["count"]?.intValue != Int64(n), Date() < give { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertEqual(feature.state["count"]?.intValue, Int64(n), "every action reduced")
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
            guard message["event"]?.stringValue == "output", let text = message["body"]?["output"]?.stringValue else { continue }
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
