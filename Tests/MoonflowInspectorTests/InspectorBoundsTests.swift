import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowLua
import MoonflowInspector
import PluginFixtures
import XCTest

/// What the inspector keeps is bounded: a window of frames (by count and bytes)
/// with whole states from before it for `jump`, the actions for `rerun` within
/// their share, and a page that does not read is dropped once its queue is full.
final class InspectorBoundsTests: XCTestCase {
    private var inspected: InspectedRun?
    override func tearDown() { inspected?.stop() }

    private func start(path: String? = nil, _ limits: InspectorHub.Limits) throws -> InspectedRun {
        let run = try path.map { try InspectedRun(path: $0, limits: limits) } ?? InspectedRun(limits: limits)
        inspected = run
        return run
    }

    private func ws(_ run: InspectedRun) -> String {
        run.url.replacingOccurrences(of: "http://", with: "ws://").replacingOccurrences(
            of: "/?token=", with: "/ws?token=")
    }

    /// Sends `count` increments and waits for their frames (action, mutation, state each).
    private func increment(_ run: InspectedRun, _ count: Int) throws {
        for _ in 0..<count { run.feed.send(#"{"type":"increment"}"#) }
        try run.waitForFrames(1 + 3 * count + count / 10)  // a milestone effect every ten
    }

    func testALatePageGetsTheWindowAndTheStateItStartsFrom_AndThePatchesLeadToTheLiveState() async throws {
        let run = try start(.init(frames: 40))
        try increment(run, 50)
        XCTAssertLessThanOrEqual(run.hub.kept.frames, 40)
        let total = run.hub.frameCount
        let page = try await Page.open(ws(run))
        defer { page.close() }
        let session = try await page.frames(count: 1)[0]
        guard case .integer(let first)? = session["first"] else { return XCTFail("no first in \(session)") }
        XCTAssertGreaterThan(first, 0)
        XCTAssertEqual(session["last"], .integer(Int64(total - 1)))
        XCTAssertEqual(session["keep"], 40, "\(session)")
        let frames = try await page.frames(count: 1 + total - Int(first))
        XCTAssertEqual(frames[1]["seq"], .integer(first), "the window's frames follow, from its first")
        // The base state and the patches after it give the live state.
        var state = try XCTUnwrap(session["base"]?["state"])
        for frame in frames[1...] where frame["event"] == "state" {
            state = try XCTUnwrap(JSONPatch.apply(try JSONPatch.operations(try XCTUnwrap(frame["patch"])), to: state))
        }
        XCTAssertEqual(state, ["count": 50])
        // A page that holds frames the window no longer has is resynced.
        try await page.send(#"{"cmd":"hello","since":3}"#)
        let again = try await page.frames(count: frames.count + 1)
        XCTAssertEqual(again.last?["event"], "session")
    }

    func testJumpInsideTheWindowIsExact_BeforeItTheNearestOlderState_AndTooFarBackIsRefused() async throws {
        // Small: one older state of the counter (about 30 bytes) fits a quarter of 200 bytes only once or so.
        let run = try start(.init(frames: 30, bytes: 1 << 20))
        try increment(run, 200)
        let page = try await Page.open(ws(run))
        defer { page.close() }
        let session = try await page.frames(count: 1)[0]
        guard case .integer(let first)? = session["first"] else { return XCTFail("no first in \(session)") }
        var got = 1 + run.hub.frameCount - Int(first)
        _ = try await page.frames(count: got)
        func jump(_ seq: Int) async throws -> LuaValue {
            try await page.send(#"{"cmd":"jump","seq":\#(seq)}"#)
            got += 1
            return try await page.frames(count: got)[got - 1]
        }
        // In the window: the state as of that frame (the counter's count is its step).
        let inside = try await jump(Int(first) + 10)
        XCTAssertEqual(inside["event"], "jump")
        XCTAssertEqual(inside["state"]?["count"], inside["step"])
        XCTAssertLessThanOrEqual(inside["stateSeq"]?.intValue ?? .max, first + 10)
        // Before it: a whole state kept from before the window, at or before the frame asked for.
        let before = try await jump(300)
        XCTAssertEqual(before["event"], "jump", "\(before)")
        let stateSeq = try XCTUnwrap(before["stateSeq"]?.intValue)
        XCTAssertLessThanOrEqual(stateSeq, 300)
        XCTAssertLessThan(
            300 - Int(stateSeq), 3 * InspectorHub.snapshotEvery + 10, "one is kept every 64 states (three frames each)")
        XCTAssertEqual(before["state"]?["count"], before["step"])
        // The very start is kept still (a megabyte holds every older snapshot of the counter).
        let start = try await jump(0)
        XCTAssertEqual(start["state"], ["count": 0])
        run.feed.end()
    }

    func testOlderStatesPastTheirShareGo_AndAJumpThereSaysWhatIsKept() async throws {
        // 1 KB: older states may take 256 bytes, the counter's about 15 bytes each, one every 64 states.
        let run = try start(.init(frames: 30, bytes: 1024))
        try increment(run, 2000)
        let page = try await Page.open(ws(run))
        defer { page.close() }
        let session = try await page.frames(count: 1)[0]
        guard case .integer(let first)? = session["first"] else { return XCTFail("no first in \(session)") }
        let got = 1 + run.hub.frameCount - Int(first)
        _ = try await page.frames(count: got)
        try await page.send(#"{"cmd":"jump","seq":0}"#)
        let refused = try await page.frames(count: got + 1)[got]
        XCTAssertEqual(refused["ok"], false)
        let message = refused["message"]?.stringValue ?? ""
        XCTAssertTrue(
            message.contains(
                "frame 0 is older than the inspector keeps (frames \(first) to \(run.hub.frameCount - 1), whole states back to frame "
            ), message)
        XCTAssertTrue(message.contains("--inspect-memory"), message)
    }

    func testEverythingKeptStaysWithinTheBytesGiven_AndRerunSaysWhenTheActionsOutgrewTheirShare() async throws {
        let bytes = 64 << 10
        let run = try start(.init(frames: 1_000_000, bytes: bytes))
        try increment(run, 3000)
        let kept = run.hub.kept
        XCTAssertLessThanOrEqual(kept.bytes, bytes)
        XCTAssertLessThan(kept.frames, run.hub.frameCount)
        let page = try await Page.open(ws(run))
        defer { page.close() }
        let session = try await page.frames(count: 1)[0]
        let got = 1 + run.hub.frameCount - Int(session["first"]?.intValue ?? 0)
        _ = try await page.frames(count: got)
        try await page.send(#"{"cmd":"rerun"}"#)
        let reply = try await page.frames(count: got + 1)[got]
        XCTAssertEqual(reply["ok"], false)
        XCTAssertTrue(
            (reply["message"]?.stringValue ?? "").contains(
                "rerun: this run has sent 3000 actions, more than the inspector keeps to send again"), "\(reply)")
    }

    func testAPageThatDoesNotReadIsDroppedOnceItsQueueIsFull_AndTheRunGoesOn() throws {
        // Each state carries 20 KB of text: the queue of 1 MB (and the sockets' buffers) fill long before 1,000 of them are written.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "moonflow-bounds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let plugin = folder.appendingPathComponent("big.lua")
        try """
        local mf = require "moonflow"
        return mf.feature {
          name = "big",
          initial = { text = "" },
          actions = { put = { n = "integer" } },
          mutations = { set = { n = "integer" } },
          handle = function(action) return { type = "set", n = action.n } end,
          reduce = function(state, m) state.text = string.rep(string.char(97 + m.n % 26), 20000) .. m.n; return state end,
        }
        """.write(to: plugin, atomically: true, encoding: .utf8)
        let run = try start(path: plugin.path, .init(frames: 100, bytes: 1 << 20))
        try run.waitForFrames(1)
        let port = URL(string: run.url)!.port!
        let stalled = try RawHTTP.open(
            [
                "GET /ws?token=\(run.server.token) HTTP/1.1", "Host: 127.0.0.1:\(port)", "Upgrade: websocket",
                "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
            ],
            port: port, receiveBuffer: 4096)
        defer { close(stalled) }
        var deadline = Date().addingTimeInterval(30)
        while run.hub.pageCount == 0, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertEqual(run.hub.pageCount, 1, "the page connected")
        // A thousand 20 KB states through the hub: about 6 s in a debug build, 25-40 s under
        // AddressSanitizer. The wait is for the run to get there, not a timing.
        for n in 0..<1000 { run.feed.send(#"{"type":"put","n":\#(n)}"#) }
        try run.waitForFrames(1 + 3 * 1000, within: 180)
        deadline = Date().addingTimeInterval(30)
        while run.hub.pageCount > 0, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertEqual(run.hub.pageCount, 0, "the page that does not read was dropped")
        XCTAssertLessThanOrEqual(run.hub.kept.bytes, 1 << 20)
        // The run goes on, and a page that reads gets the window.
        run.feed.send(#"{"type":"put","n":7}"#)
        try run.waitForFrames(1 + 3 * 1001)
    }
}
