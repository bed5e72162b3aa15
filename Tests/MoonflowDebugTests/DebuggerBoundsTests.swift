import Foundation
import LuaKit
@testable import MoonflowDebug
import XCTest

/// An admitted editor cannot crash or freeze the run either: every number it sends is
/// checked before arithmetic, what it is told comes in the protocol's order, and a feature
/// never waits on an editor that stops reading.
final class DebuggerBoundsTests: XCTestCase {
    private var folder: URL!
    private var script: String { folder.appendingPathComponent("sum.lua").path }
    /// Line 3 runs a hundred times.
    private let source = "local total = 0\nfor i = 1, 100 do\n  total = total + i\nend\nreturn total\n"

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-bounds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try source.write(toFile: script, atomically: true, encoding: .utf8)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: folder) }

    /// A served state, an admitted editor, and the script started on a thread of its own,
    /// stopped at line 3 (or, for an editor counting from 0, its line 2).
    private func stoppedAtLine3(
        linesStartAt1: Bool = true
    ) throws -> (DebugServer, EditorClient, DispatchSemaphore, Box) {
        let lua = try LuaState(profile: .trusted)
        let server = try DebugServer(host: "127.0.0.1", port: 0, name: "sum") { _ in }
        XCTAssertTrue(server.controller.serve(lua))
        let editor = try EditorClient(port: Int(server.address.split(separator: ":").last ?? "") ?? 0)
        _ = try editor.request("initialize", ["linesStartAt1": LuaValue(linesStartAt1)])
        try editor.attach(token: server.access.token)
        let placed = try editor.request(
            "setBreakpoints",
            [
                "source": ["path": LuaValue(script)],
                "breakpoints": [["line": LuaValue(linesStartAt1 ? 3 : 2)]],
            ])
        XCTAssertEqual(placed["body"]?["breakpoints"]?[0]?["verified"]?.boolValue, true)
        let finished = DispatchSemaphore(value: 0)
        let result = Box()
        let source = self.source, script = self.script
        Thread {
            result.values = try? lua.run(string: source, name: script)
            finished.signal()
        }.start()
        let stopped = try editor.event("stopped")
        XCTAssertEqual(stopped["body"]?["reason"]?.stringValue, "breakpoint")
        XCTAssertEqual(
            stopped["body"]?["hitBreakpointIds"], LuaValue([placed["body"]?["breakpoints"]?[0]?["id"] ?? .nil]),
            "the stop names the breakpoint by the id its answer gave")
        return (server, editor, finished, result)
    }

    final class Box: @unchecked Sendable { var values: [LuaValue]? }

    /// Before, `scopes` with a frameId of 2^62 and a line of Int64.min trapped (SIGILL).
    func testNumbersOutOfRangeAreRefusedByNameAndTheRunGoesOn() throws {
        let (server, editor, finished, result) = try stoppedAtLine3(linesStartAt1: false)
        defer { server.close() }
        let huge = LuaValue(Int64(1) << 62)
        let cases: [(String, LuaValue, String)] = [
            (
                "scopes", ["frameId": huge],
                "scopes's frameId must be an integer from 1 to 100000; it was 4611686018427387904"
            ),
            ("scopes", ["frameId": LuaValue(Int64.min)], "scopes's frameId must be an integer from 1 to 100000"),
            ("scopes", ["frameId": 0], "scopes's frameId must be"),
            ("scopes", ["frameId": 1.5], "scopes's frameId must be an integer"),
            ("scopes", ["frameId": "1"], "scopes's frameId must be an integer"),
            ("scopes", [:], "scopes needs arguments.frameId"),
            (
                "variables", ["variablesReference": LuaValue(Int64.max)],
                "variables's variablesReference must be an integer from 1 to 2147483647"
            ),
            ("variables", ["variablesReference": -5], "variables's variablesReference must be"),
            ("evaluate", ["expression": "1", "frameId": LuaValue(Int64.min)], "evaluate's frameId must be"),
            ("evaluate", ["expression": "1", "frameId": huge], "evaluate's frameId must be"),
            ("stackTrace", ["threadId": 1, "startFrame": LuaValue(Int64.max)], "stackTrace's startFrame must be"),
            ("stackTrace", ["threadId": 1, "levels": LuaValue(Int64.min)], "stackTrace's levels must be"),
            ("stackTrace", ["threadId": 1, "startFrame": -1], "stackTrace's startFrame must be"),
            (
                "setBreakpoints",
                ["source": ["path": LuaValue(script)], "breakpoints": [["line": LuaValue(Int64.max)]]],
                "setBreakpoints' breakpoints[0]'s line must be an integer from 0 to 2147483646"
            ),
            (
                "setBreakpoints",
                ["source": ["path": LuaValue(script)], "breakpoints": [["line": 1], ["line": LuaValue(Int64.min)]]],
                "setBreakpoints' breakpoints[1]'s line must be"
            ),
            (
                "setBreakpoints", ["source": ["path": LuaValue(script)], "breakpoints": [["line": -1]]],
                "line must be an integer from 0"
            ),
            (
                "setBreakpoints",
                [
                    "source": ["path": LuaValue(script)],
                    "breakpoints": LuaValue(Array(repeating: ["line": 2] as LuaValue, count: 10_001)),
                ],
                "setBreakpoints takes at most 10000 breakpoints a file; it was given 10001"
            ),
        ]
        for (command, arguments, expected) in cases {
            let answer = try editor.request(command, arguments)
            XCTAssertEqual(answer["success"]?.boolValue, false, "\(command) \(arguments)")
            XCTAssertTrue(answer["message"]?.stringValue?.contains(expected) == true, "\(command): \(answer)")
        }
        // The largest in range are served, and answer as out of the stack.
        XCTAssertEqual(
            try editor.request(
                "stackTrace", ["threadId": 1, "startFrame": LuaValue(Int32.max), "levels": LuaValue(Int32.max)])[
                    "body"]?["stackFrames"],
            LuaValue([LuaValue]()))
        let far = try editor.request("scopes", ["frameId": 100_000])
        let ref = try XCTUnwrap(far["body"]?["scopes"]?[0]?["variablesReference"])
        XCTAssertTrue(
            try editor.request("variables", ["variablesReference": ref])["message"]?.stringValue?.contains(
                "no frame 100000") == true)
        XCTAssertTrue(
            try editor.request("variables", ["variablesReference": LuaValue(Int32.max)])["success"]?.boolValue == false)

        // The refused setBreakpoints changed nothing: still stopped at the breakpoint, which is still set.
        XCTAssertEqual(
            try editor.request("stackTrace", ["threadId": 1])["body"]?["stackFrames"]?[0]?["line"]?.intValue, 2,
            "line 3, counted from 0")
        XCTAssertEqual(try editor.request("continue", ["threadId": 1])["success"]?.boolValue, true)
        XCTAssertEqual(
            try editor.event("stopped")["body"]?["reason"]?.stringValue, "breakpoint", "the next pass stops again")
        XCTAssertEqual(
            try editor.request("setBreakpoints", ["source": ["path": LuaValue(script)], "breakpoints": []])["success"]?
                .boolValue, true)
        _ = try editor.request("continue", ["threadId": 1])
        XCTAssertEqual(finished.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(result.values, [5050])
    }

    /// A step's (and a continue's) response comes before the stop it leads to: the feature,
    /// let go, stops again while the response is being written.
    func testEachStepsResponseComesBeforeTheStopItLeadsTo() throws {
        let (server, editor, finished, result) = try stoppedAtLine3()
        defer { server.close() }
        for (i, command) in (Array(repeating: "next", count: 40) + Array(repeating: "continue", count: 10)).enumerated()
        {
            let before = editor.received.count
            let answer = try editor.request(command, ["threadId": 1])
            XCTAssertEqual(answer["success"]?.boolValue, true, "\(command) \(i)")
            let stopped = try editor.event("stopped")
            let arrived = editor.received[before...]
            let response = try XCTUnwrap(arrived.firstIndex { $0["type"]?.stringValue == "response" })
            let stop = try XCTUnwrap(arrived.firstIndex { $0["event"]?.stringValue == "stopped" })
            XCTAssertLessThan(response, stop, "\(command) \(i): the response first")
            XCTAssertEqual(stopped["body"]?["reason"]?.stringValue, command == "next" ? "step" : "breakpoint")
        }
        XCTAssertEqual(try editor.request("disconnect")["success"]?.boolValue, true)
        XCTAssertEqual(finished.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(result.values, [5050])
    }
}
