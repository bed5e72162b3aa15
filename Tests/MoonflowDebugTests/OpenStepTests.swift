import Foundation
import LuaKit
@testable import MoonflowDebug
import MoonflowHost
import MoonflowInspector
import MoonflowRun
import PluginFixtures
import XCTest

/// The inspector's "open in the debugger" on a live run (`moonflow run --inspect --debug`):
/// the page's `debug` command, the run's copy of itself on the virtual clock, and the editor
/// attached to the run's debugger, each over its real socket.
final class OpenStepTests: XCTestCase {
    private static let counter = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("plugins/counter").path

    func testAStepOpenedFromTheInspectorStopsAtItsActionsHandleWithTheStateBeforeIt() async throws {
        let debugger = try DebugServer(
            host: "127.0.0.1", port: 0, name: "counter", token: String(repeating: "ab", count: 16)
        ) { _ in }
        defer { debugger.close() }
        let hub = InspectorHub(rerun: FeatureRun.rerun)
        let server = InspectorServer(hub: hub, shownBy: "the test")
        let url = try await server.start()

        // The live run on the real clock: three increments, then its input stays open.
        var options = FeatureRun.Options(path: Self.counter)
        options.format = .jsonl
        options.observers = [hub]
        options.handAnswers(to: hub)
        options.prepareHost = { host, _ in debugger.controller.serve(host.lua) }
        options.openInDebugger = debugger.opensSteps(of: Self.counter, seed: nil)
        let more = Feed()
        more.send(#"{"type":"increment"}"#, #"{"type":"increment","by":5}"#, #"{"type":"increment"}"#)
        let run = FeatureRun(
            options: options, input: InputSource(interactive: false, name: "test") { more.next() }, write: { _ in })
        let finished = DispatchSemaphore(value: 0)
        Thread {
            _ = run.run()
            finished.signal()
        }.start()
        defer {
            more.end()
            _ = finished.wait(timeout: .now() + 30)
        }
        let deadline = Date().addingTimeInterval(30)
        while hub.frameCount < 10 {
            guard Date() < deadline else { return XCTFail("the run sent \(hub.frameCount) frames, not 10") }
            try await Task.sleep(nanoseconds: 5_000_000)
        }

        let page = try await Page.open(
            url.replacingOccurrences(of: "http://", with: "ws://").replacingOccurrences(
                of: "/?token=", with: "/ws?token="))
        defer { page.close() }
        let frames = try await page.frames(count: 11)
        let mutation = try XCTUnwrap(frames.first { $0["event"] == "mutation" && $0["mutation"]?["n"] == 5 })

        // Without an editor, the page is told to attach one.
        try await page.send(#"{"cmd":"debug","seq":\#(mutation["seq"]!)}"#)
        let alone = try await page.frames(count: 12)[11]
        XCTAssertEqual(alone["ok"], false)
        XCTAssertTrue(
            alone["message"]?.stringValue?.contains("no editor is attached to the debugger on") ?? false, "\(alone)")

        let port = try XCTUnwrap(debugger.address.split(separator: ":").last.flatMap { Int($0) })
        let editor = try EditorClient(port: port)
        _ = try editor.request("initialize")
        _ = try editor.attach(token: debugger.access.token)
        _ = try editor.request("configurationDone")

        // The second increment's mutation: the copy stops at that action's handle, the state as before it.
        try await page.send(#"{"cmd":"debug","seq":\#(mutation["seq"]!)}"#)
        let stopped = try editor.event("stopped")
        XCTAssertEqual(stopped["body"]?["reason"], "goto", "\(stopped)")
        XCTAssertTrue(stopped["body"]?["description"]?.stringValue?.hasPrefix("action 2 of the run") ?? false)
        let reply = try await page.frames(count: 13)[12]
        XCTAssertEqual(reply["ok"], true, "\(reply)")
        XCTAssertEqual(reply["action"], 1)
        let trace = try editor.request("stackTrace", ["threadId": 1])
        let top = try XCTUnwrap(trace["body"]?["stackFrames"]?[0])
        XCTAssertTrue(top["name"]?.stringValue?.contains("handle") ?? false, "\(trace)")
        XCTAssertEqual(top["source"]?["path"]?.stringValue?.hasSuffix("plugins/counter/init.lua"), true, "\(top)")
        let by = try editor.request("evaluate", ["expression": "action.by", "frameId": 1])
        XCTAssertEqual(by["body"]?["result"], "5", "that step's action: \(by)")
        XCTAssertEqual(top["canRestart"], false)
        // The copy cannot go back: the editor is told to open an earlier step instead.
        let back = try editor.request("stepBack", ["threadId": 1])
        XCTAssertEqual(back["success"], false)
        XCTAssertTrue(
            back["message"]?.stringValue?.contains("open an earlier step from the inspector") ?? false, "\(back)")

        // The live run was not stopped meanwhile: an action sent now is reduced at once.
        XCTAssertEqual(hub.frameCount, 10, "the copy sent nothing to the live run's inspector")
        more.send(#"{"type":"increment","by":10}"#)
        while hub.frameCount < 13 {
            guard Date() < deadline.addingTimeInterval(30) else { return XCTFail("the live run stopped") }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        _ = try editor.request("continue", ["threadId": 1])
        let live = try await page.frames(count: 16)
        XCTAssertEqual(live.last?["patch"]?[0]?["value"], 17, "the live count: 1 + 5 + 1 + 10, \(live.suffix(3))")
        await server.stop()
    }
}
