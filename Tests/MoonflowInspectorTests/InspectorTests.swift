import Foundation
import MoonflowEvents
import MoonflowRun
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import MoonflowInspector
import PluginFixtures
import XCTest

/// The inspector's server and protocol, driven by a WebSocket client as a page
/// would, over a real `FeatureRun` of the counter plugin.
final class InspectorTests: XCTestCase {
    private var inspected: InspectedRun!
    private var hub: InspectorHub { inspected.hub }
    private var server: InspectorServer { inspected.server }
    private var url: String { inspected.url }
    private var feed: Feed { inspected.feed }

    override func setUpWithError() throws { inspected = try InspectedRun() }
    override func tearDown() { inspected.stop() }

    private var wsURL: String {
        url.replacingOccurrences(of: "http://", with: "ws://").replacingOccurrences(of: "/?token=", with: "/ws?token=")
    }

    private func waitForFrames(_ count: Int) throws { try inspected.waitForFrames(count) }

    func testALatePageGetsTheSessionAndEveryFrameAndThePatchesRebuildTheLiveState() async throws {
        feed.send(#"{"type":"increment"}"#, #"{"type":"increment","by":4}"#)
        try waitForFrames(7)  // state 0, then action, mutation, state twice
        let page = try await Page.open(wsURL)
        defer { page.close() }
        let frames = try await page.frames(count: 8)
        XCTAssertEqual(frames[0]["event"], "session")
        XCTAssertEqual(frames[0]["feature"], "counter")
        XCTAssertEqual(frames[0]["actions"]?["increment"]?["by"], "integer?")
        let seqs: [LuaValue] = frames[1...].map { (frame: LuaValue) -> LuaValue in frame["seq"] ?? .nil }
        XCTAssertEqual(seqs, [0, 1, 2, 3, 4, 5, 6])
        XCTAssertEqual(
            frames[1...].map { $0["event"]?.stringValue ?? "" },
            ["state", "action", "mutation", "state", "action", "mutation", "state"])
        // The whole state once, then patches that lead to the live state.
        let first: LuaValue? = frames[1]["state"]
        var state = try XCTUnwrap(first)
        for frame in frames[2...] where frame["event"] == "state" {
            XCTAssertNil(frame["state"])
            let patch: LuaValue? = frame["patch"]
            let next: LuaValue? = JSONPatch.apply(try JSONPatch.operations(try XCTUnwrap(patch)), to: state)
            state = try XCTUnwrap(next)
        }
        XCTAssertEqual(state, ["count": 5])
        // Each mutation and state names the action frame that caused it.
        XCTAssertEqual(frames[3]["cause"]?["seq"], 1)
        XCTAssertEqual(frames[4]["cause"]?["seq"], 1)
        XCTAssertEqual(frames[6]["cause"]?["seq"], 4)
        XCTAssertEqual(frames[6]["cause"]?["action"], ["type": "increment", "by": 4])
        XCTAssertNil(frames[2]["cause"])
    }

    func testAnActionFrameHasNoCauseWhenTheSameActionWasSentBefore() throws {
        // The run tells an action event its own action as `cause`; only what it caused links to it.
        let hub = InspectorHub()
        let sent = PageInChromiumTests.Report()
        _ = hub.connect { sent.add($0) }
        let action: LuaValue = ["type": "increment"]
        hub.observe(.state(["count": 0], seq: 0), t: 0, cause: nil)
        for n in 1...2 {
            hub.observe(.action(action), t: n, cause: action)
            hub.observe(.mutation(["type": "add", "n": 1], seq: n), t: n, cause: action)
        }
        let frames = try sent.lines.map { try LuaValue(json: $0) }
        XCTAssertEqual(
            frames.map { $0["event"]?.stringValue ?? "" },
            ["session", "state", "action", "mutation", "action", "mutation"])
        XCTAssertNil(frames[2]["cause"])
        XCTAssertNil(frames[4]["cause"])
        XCTAssertEqual(frames[3]["cause"]?["seq"], 1)
        XCTAssertEqual(frames[5]["cause"]?["seq"], 3)
    }

    /// A composite's reaction is an action frame under the action behind the effect it reacts
    /// to, and what its action causes links to it.
    func testAReactionFrameLinksToItsCauseAndWhatItCausesToIt() throws {
        let hub = InspectorHub()
        let sent = PageInChromiumTests.Report()
        _ = hub.connect { sent.add($0) }
        let pay: LuaValue = ["type": "pay"]
        let clear: LuaValue = ["type": "clear"]
        hub.observe(.state(["n": 1], seq: 0), t: 0, cause: nil)
        hub.observe(.action(pay), t: 0, cause: pay)
        hub.observe(.mutation(["type": "paid"], seq: 1), t: 100, cause: pay)
        hub.observe(.reaction(clear, to: "cart", from: "payment", effect: ["type": "receipt"]), t: 100, cause: pay)
        hub.observe(.mutation(["type": "cleared"], seq: 2), t: 100, cause: clear)
        let frames = try sent.lines.map { try LuaValue(json: $0) }
        XCTAssertEqual(
            frames.map { $0["event"]?.stringValue ?? "" },
            ["session", "state", "action", "mutation", "action", "mutation"])
        XCTAssertEqual(frames[4]["cause"]?["seq"], 1, "the reaction sits under pay")
        XCTAssertEqual(frames[4]["to"], "cart")
        XCTAssertEqual(frames[4]["react"]?["from"], "payment")
        XCTAssertEqual(frames[5]["cause"]?["seq"], 3, "cleared sits under the reaction")
    }

    func testHelloSinceResendsOnlyTheFramesAfterIt_AndAnUnknownSeqResyncsEverything() async throws {
        feed.send(#"{"type":"increment"}"#)
        try waitForFrames(4)
        let page = try await Page.open(wsURL)
        defer { page.close() }
        _ = try await page.frames(count: 5)
        try await page.send(#"{"cmd":"hello","since":2}"#)
        let after = try await page.frames(count: 6)
        XCTAssertEqual(after[5]["seq"], 3)
        try await page.send(#"{"cmd":"hello","since":99}"#)
        let all = try await page.frames(count: 11)
        XCTAssertEqual(all[6]["event"], "session")
        let seqs: [LuaValue] = all[7...].map { (frame: LuaValue) -> LuaValue in frame["seq"] ?? .nil }
        XCTAssertEqual(seqs, [0, 1, 2, 3])
    }

    func testDispatchFromThePageIsValidatedByTheSchemaAndRuns() async throws {
        try waitForFrames(1)
        let page = try await Page.open(wsURL)
        defer { page.close() }
        _ = try await page.frames(count: 2)
        try await page.send(#"{"cmd":"dispatch","action":{"type":"increment","by":"two"}}"#)
        let refused = try await page.frames(count: 3)[2]
        XCTAssertEqual(refused["event"], "reply")
        XCTAssertEqual(refused["ok"], false)
        XCTAssertTrue(refused["message"]?.stringValue?.contains("'by'") ?? false, "\(refused)")
        try await page.send(#"{"cmd":"dispatch","action":{"type":"increment","by":2}}"#)
        let frames = try await page.frames(count: 7)
        XCTAssertTrue(
            frames.contains {
                $0["event"] == "state" && $0["patch"] == [["op": "replace", "path": "/count", "value": 2]]
            }, "\(frames)")
        XCTAssertTrue(frames.contains { $0["event"] == "reply" && $0["ok"] == true }, "\(frames)")
    }

    func testJumpShowsThePastState_DispatchesWaitForResume_AndNothingRunsTwice() async throws {
        feed.send(#"{"type":"increment"}"#, #"{"type":"increment"}"#, #"{"type":"increment"}"#)
        try waitForFrames(10)
        let page = try await Page.open(wsURL)
        defer { page.close() }
        _ = try await page.frames(count: 11)
        try await page.send(#"{"cmd":"jump","seq":5}"#)
        let jump = try await page.frames(count: 12)[11]
        XCTAssertEqual(jump["event"], "jump")
        XCTAssertEqual(jump["state"], ["count": 1])
        XCTAssertEqual(jump["step"], 1)
        try await page.send(#"{"cmd":"jump","seq":9}"#)
        let later = try await page.frames(count: 13)[12]
        XCTAssertEqual(later["state"], ["count": 3])
        try await page.send(#"{"cmd":"dispatch","action":{"type":"reset"}}"#)
        let queued = try await page.frames(count: 14)[13]
        XCTAssertEqual(queued["queued"], 1)
        XCTAssertEqual(hub.frameCount, 10, "a dispatch while travelling waits")
        try await page.send(#"{"cmd":"resume"}"#)
        let frames = try await page.frames(count: 18)
        XCTAssertEqual(frames[14]["event"], "resume")
        XCTAssertEqual(frames[14]["state"], ["count": 3])
        XCTAssertEqual(frames[14]["sent"], 1)
        XCTAssertTrue(
            frames[15...].contains { $0["event"] == "action" && $0["action"] == ["type": "reset"] }, "\(frames)")
        try waitForFrames(13)
        XCTAssertEqual(
            hub.frameCount, 13, "jumping re-ran nothing: only the reset's action, mutation and state were added")
    }

    func testInflightNamesTheWorkStillRunningAndTheActionThatStartedIt() async throws {
        feed.send(#"{"type":"incrementLater","ms":60000}"#)
        try waitForFrames(2)
        let page = try await Page.open(wsURL)
        defer { page.close() }
        _ = try await page.frames(count: 3)
        try await page.send(#"{"cmd":"inflight"}"#)
        let reply = try await page.frames(count: 4)[3]
        XCTAssertEqual(reply["event"], "inflight")
        let flight: LuaValue? = reply["flights"]?[0]
        XCTAssertEqual(flight?["what"], "incrementLater #1")
        XCTAssertEqual(flight?["seq"], 1)
        XCTAssertNotNil(flight?["ms"])
        // incrementLater is `latest`: a short one replaces the long one, so the run can end.
        feed.send(#"{"type":"incrementLater","ms":1}"#)
    }

    func testRestartStartsOverFromInitialAndCancelsWhatWasInFlight() async throws {
        feed.send(#"{"type":"increment","by":3}"#, #"{"type":"incrementLater","ms":60000}"#)
        try waitForFrames(5)  // state 0, action, mutation, state, action (its timer waits)
        let page = try await Page.open(wsURL)
        defer { page.close() }
        _ = try await page.frames(count: 6)
        try await page.send(#"{"cmd":"restart"}"#)
        let after = try await page.frames(count: 9)[6...]
        let events = after.map { $0["event"]?.stringValue ?? "" }
        XCTAssertTrue(events.contains("reply"), "\(after)")
        let reload = try XCTUnwrap(after.first { $0["event"] == "reload" })
        XCTAssertEqual(reload["cancelled"], ["incrementLater #2"])
        let state = try XCTUnwrap(after.first { $0["event"] == "state" })
        let next: LuaValue? = JSONPatch.apply(try JSONPatch.operations(try XCTUnwrap(state["patch"])), to: ["count": 3])
        XCTAssertEqual(next, ["count": 0])
    }

    func testRerunSendsTheActionsToTheCodeAsItIsNowAndNamesTheStepsThatDiffer() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "moonflow-rerun-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let plugin = folder.appendingPathComponent("counter")
        try FileManager.default.copyItem(at: InspectedRun.root.appendingPathComponent("plugins/counter"), to: plugin)
        inspected.stop()
        inspected = try InspectedRun(path: plugin.path)
        feed.send(#"{"type":"increment"}"#, #"{"type":"increment"}"#, #"{"type":"increment"}"#)
        try waitForFrames(10)
        let page = try await Page.open(wsURL)
        defer { page.close() }
        _ = try await page.frames(count: 11)
        try await page.send(#"{"cmd":"rerun"}"#)
        let same = try await page.frames(count: 12)[11]
        XCTAssertEqual(same["event"], "rerun")
        XCTAssertEqual(same["differs"], LuaValue.table(LuaTable(isJSONArray: true)))
        XCTAssertEqual(same["states"], 4)

        let source = plugin.appendingPathComponent("init.lua")
        let code = try String(contentsOf: source, encoding: .utf8)
        try code.replacingOccurrences(of: "state.count + m.n", with: "state.count + 2 * m.n").write(
            to: source, atomically: true, encoding: .utf8)
        try await page.send(#"{"cmd":"rerun"}"#)
        let changed = try await page.frames(count: 13)[12]
        XCTAssertEqual(changed["differs"], [3, 6, 9])
        // Each differing step with the state the code gives now and the diff, as replay prints it.
        XCTAssertEqual(changed["changes"]?[0]?["seq"], 3)
        XCTAssertEqual(changed["changes"]?[0]?["now"], ["count": 2])
        XCTAssertEqual(changed["changes"]?[0]?["diff"], ["- count = 1", "+ count = 2"])
        XCTAssertEqual(hub.frameCount, 10, "re-running touched nothing of the live run")
    }

    /// A run on the real clock whose feature reads SQLite (`load`, then `add` and `drop`
    /// sent at once): `rerun` answers each repository call as the run's was answered, at the
    /// point it arrived, so unchanged code differs nowhere (before: the rerun's repositories
    /// were fresh in memory, `load` found no draft, and every later step differed).
    func testRerunAnswersRepositoryCallsAsTheRunDid() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "moonflow-rerun-sqlite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let plugin = folder.appendingPathComponent("checkout")
        try FileManager.default.copyItem(at: InspectedRun.root.appendingPathComponent("plugins/checkout"), to: plugin)
        // A draft in the plugin's SQLite file from an earlier session.
        var seed = FeatureRun.Options(path: plugin.path)
        seed.clock = .virtual
        seed.format = .jsonl
        var seedLines = [#"{"type":"add","sku":"tea","qty":2}"#].makeIterator()
        _ = FeatureRun(
            options: seed, input: InputSource(interactive: false, name: "seed") { seedLines.next() }, write: { _ in }
        ).run()

        inspected.stop()
        inspected = try InspectedRun(path: plugin.path)
        feed.send(#"{"type":"load"}"#, #"{"type":"add","sku":"jam"}"#, #"{"type":"drop","sku":"tea"}"#)
        // state 0; load and its call; add and drop, each with its mutation, state, internal
        // `saveDraft` and its call; the late `restored` and its state.
        try waitForFrames(15)
        let page = try await Page.open(wsURL)
        defer { page.close() }
        let live = try await page.frames(count: 16)
        XCTAssertTrue(
            live.contains { $0["event"] == "mutation" && $0["mutation"]?["type"] == "restored" },
            "the draft was loaded: \(live)")
        try await page.send(#"{"cmd":"rerun"}"#)
        let same = try await page.frames(count: 17)[16]
        XCTAssertEqual(same["event"], "rerun")
        XCTAssertEqual(same["differs"], LuaValue.table(LuaTable(isJSONArray: true)), "\(same)")
        XCTAssertEqual(same["states"], 4)
    }

    /// The timeline shows the internal effect `saveDraft` and its `drafts:put` under the
    /// action behind them (before, neither was a frame), and a broken invariant as a frame
    /// naming it and its step.
    func testInternalEffectsCallsAndBrokenInvariantsAreFramesUnderTheirAction() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "moonflow-inspect-effects-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let plugin = folder.appendingPathComponent("checkout")
        try FileManager.default.copyItem(at: InspectedRun.root.appendingPathComponent("plugins/checkout"), to: plugin)
        // A reducer that forgets the total once a second line is added: `totalAddsUp` breaks.
        let file = plugin.appendingPathComponent("init.lua")
        let source = try String(contentsOf: file, encoding: .utf8)
        let total = "    state.total = total(state.lines, state.discount)\n"
        XCTAssertTrue(source.contains(total))
        try source.replacingOccurrences(
            of: total, with: "    if #state.lines < 2 then state.total = total(state.lines, state.discount) end\n"
        ).write(to: file, atomically: true, encoding: .utf8)
        inspected.stop()
        inspected = try InspectedRun(path: plugin.path)
        feed.send(#"{"type":"add","sku":"tea"}"#, #"{"type":"add","sku":"jam"}"#)
        // state 0; add: action, mutation, state, internal, call; add again, and the invariant.
        try waitForFrames(12)
        let page = try await Page.open(wsURL)
        defer { page.close() }
        let frames = try await page.frames(count: 13)
        XCTAssertEqual(
            frames[1...].map { $0["event"]?.stringValue ?? "" },
            [
                "state", "action", "mutation", "state", "internal", "call",
                "action", "mutation", "state", "invariant", "internal", "call",
            ], "\(frames)")
        XCTAssertEqual(frames[5]["effect"], ["type": "saveDraft"])
        XCTAssertEqual(frames[5]["cause"]?["seq"], 1)
        XCTAssertEqual(frames[6]["service"], "drafts:put")
        XCTAssertEqual(frames[6]["call"], 1)
        XCTAssertEqual(frames[6]["cause"]?["seq"], 1)
        XCTAssertEqual(frames[10]["invariant"], "totalAddsUp")
        XCTAssertEqual(frames[10]["step"], 2)
        XCTAssertEqual(frames[10]["cause"]?["seq"], 6)
        XCTAssertEqual(frames[12]["call"], 2)
    }

    /// Two equal actions in flight (`load` twice, each reading SQLite): each late mutation
    /// joins the action that caused it, told apart by its number in the loop (before: both
    /// joined the later one, the last frame of an equal action).
    func testEqualActionsInFlightEachKeepTheirLateMutations() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "moonflow-equal-causes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let plugin = folder.appendingPathComponent("checkout")
        try FileManager.default.copyItem(at: InspectedRun.root.appendingPathComponent("plugins/checkout"), to: plugin)
        inspected.stop()
        inspected = try InspectedRun(path: plugin.path)
        feed.send(#"{"type":"load"}"#, #"{"type":"load"}"#)
        try waitForFrames(9)  // state 0; each load, its call, its late mutation and state
        let page = try await Page.open(wsURL)
        defer { page.close() }
        let frames = try await page.frames(count: 10)
        let loads = frames.filter { $0["event"] == "action" }.compactMap { $0["seq"] }
        let causes = frames.filter { $0["event"] == "mutation" }.compactMap { $0["cause"]?["seq"] }
        XCTAssertEqual(loads.count, 2, "\(frames)")
        XCTAssertEqual(Set(causes), Set(loads), "each load keeps its own restored mutation: \(frames)")
    }

    func testToggleLeavesAnActionOutAndRecomputesTheLaterStates() async throws {
        feed.send(#"{"type":"increment"}"#, #"{"type":"increment","by":5}"#, #"{"type":"increment"}"#)
        try waitForFrames(10)
        let page = try await Page.open(wsURL)
        defer { page.close() }
        _ = try await page.frames(count: 11)
        try await page.send(#"{"cmd":"toggle","seq":4}"#)
        let off = try await page.frames(count: 12)[11]
        XCTAssertEqual(off["event"], "toggle")
        XCTAssertEqual(off["off"], [4])
        XCTAssertEqual(off["state"], ["count": 2])
        XCTAssertEqual(off["differs"], [6, 9])
        try await page.send(#"{"cmd":"toggle","seq":4}"#)
        let on = try await page.frames(count: 13)[12]
        XCTAssertEqual(on["state"], ["count": 7])
        XCTAssertEqual(on["off"], LuaValue.table(LuaTable(isJSONArray: true)))
        try await page.send(#"{"cmd":"toggle","seq":5}"#)
        let refused = try await page.frames(count: 14)[13]
        XCTAssertEqual(refused["message"], "toggle: \"seq\" must be the seq of an action frame the run was sent")
        XCTAssertEqual(hub.frameCount, 10, "toggling touched nothing of the live run")
    }

    func testDebugHandsTheRunTheActionsUpToTheStepsActionAndItsPlace() async throws {
        inspected.stop()
        let asked = Asked()
        inspected = try InspectedRun(openInDebugger: { lines, answers, action in
            asked.lock.withLock { asked.calls.append((lines, answers, action)) }
        })
        feed.send(#"{"type":"increment"}"#, #"{"type":"increment","by":5}"#, #"{"type":"increment"}"#)
        try waitForFrames(10)
        let page = try await Page.open(wsURL)
        defer { page.close() }
        let frames = try await page.frames(count: 11)
        // The second increment's mutation: the debugger stops at that action's handle.
        let mutation = try XCTUnwrap(frames.first { $0["event"] == "mutation" && $0["mutation"]?["n"] == 5 })
        let action = try XCTUnwrap(mutation["cause"]?["seq"]?.intValue)
        try await page.send(#"{"cmd":"debug","seq":\#(mutation["seq"]!)}"#)
        let reply = try await page.frames(count: 12)[11]
        XCTAssertEqual(reply["ok"], true, "\(reply)")
        XCTAssertEqual(reply["seq"], .integer(action))
        XCTAssertEqual(reply["action"], 1, "the second action sent")
        let (lines, _, index) = try XCTUnwrap(asked.lock.withLock { asked.calls.first })
        XCTAssertEqual(index, 1)
        XCTAssertEqual(lines.count, 2, "the actions up to the step's, not those after: \(lines)")
        XCTAssertEqual(try LuaValue(json: lines[1])["send"], ["type": "increment", "by": 5])
        try await page.send(#"{"cmd":"debug","seq":0}"#)
        let refused = try await page.frames(count: 13)[12]
        XCTAssertEqual(refused["ok"], false)
        XCTAssertTrue(
            refused["message"]?.stringValue?.hasPrefix("debug: frame 0 is no action the run was sent") ?? false,
            "the first state has no action: \(refused)")
        XCTAssertEqual(hub.frameCount, 10, "opening a step in the debugger touched nothing of the live run")
    }

    func testDebugWithoutADebuggerSaysHowToGetOne() async throws {
        feed.send(#"{"type":"increment"}"#)
        try waitForFrames(4)
        let page = try await Page.open(wsURL)
        defer { page.close() }
        _ = try await page.frames(count: 5)
        try await page.send(#"{"cmd":"debug","seq":1}"#)
        let refused = try await page.frames(count: 6)[5]
        XCTAssertEqual(refused["ok"], false)
        XCTAssertEqual(refused["message"]?.stringValue, "debug: \(HostError.noDebugger)")
        try await page.send(#"{"cmd":"debug","seq":99}"#)
        let outside = try await page.frames(count: 7)[6]
        XCTAssertEqual(outside["message"], "debug: \"seq\" must be the seq of a frame the inspector keeps, 0 to 3")
    }

    func testAHelloSinceTheLargestIntegerResyncsInsteadOfOverflowing() async throws {
        feed.send(#"{"type":"increment"}"#)
        try waitForFrames(4)
        let page = try await Page.open(wsURL)
        defer { page.close() }
        _ = try await page.frames(count: 5)
        // Before, `since + 1` trapped and the whole run died.
        try await page.send(#"{"cmd":"hello","since":9223372036854775807}"#)
        let resent = try await page.frames(count: 10)
        XCTAssertEqual(resent[5]["event"], "session", "an unknown seq resyncs everything")
        XCTAssertEqual(resent[6]["seq"], 0)
        feed.send(#"{"type":"increment"}"#)
        try waitForFrames(7)
    }

    func testABadFrameGetsAnErrorNamingTheFixAndTheSessionGoesOn() async throws {
        try waitForFrames(1)
        let page = try await Page.open(wsURL)
        defer { page.close() }
        _ = try await page.frames(count: 2)
        try await page.send("not json")
        try await page.send(#"{"cmd":"fly"}"#)
        try await page.send(#"{"cmd":"jump","seq":40}"#)
        try await page.send(#"{"cmd":"hello","since":0}"#)
        let frames = try await page.frames(count: 5)
        XCTAssertTrue(
            frames[2]["message"]?.stringValue?.hasPrefix("frame 1 from the page is not JSON (") ?? false, "\(frames[2])"
        )
        XCTAssertEqual(
            frames[3]["message"],
            "unknown cmd \"fly\"; the commands are hello (since), dispatch (action), jump (seq), resume, inflight, rerun, toggle (seq), restart, debug (seq)"
        )
        XCTAssertEqual(frames[4]["message"], "jump: \"seq\" must be the seq of a frame, 0 to 0")
        let large = String(repeating: "x", count: 100_000)
        try await page.send(#"{"cmd":"dispatch","action":{"type":"increment","by":"\#(large)"}}"#)
        let refused = try await page.frames(count: 6)[5]
        XCTAssertTrue(
            refused["message"]?.stringValue?.contains("'by'") ?? false,
            "a large frame is read, and refused by the schema: \(refused)")
        feed.send(#"{"type":"increment"}"#)
        let more = try await page.frames(count: 7)
        XCTAssertEqual(more[6]["event"], "action", "the session went on after the bad frames")
    }

    func testThePageAndTheSocketNeedTheTokenAndTheSocketRefusesOtherOrigins() async throws {
        let page = try await get(url)
        XCTAssertEqual(page.status, 200)
        XCTAssertTrue(page.body.contains("<script>") && page.body.contains("moonflow inspector"))
        let noToken = try await get(url.replacingOccurrences(of: server.token, with: "guess"))
        XCTAssertEqual(noToken.status, 403)
        XCTAssertTrue(noToken.body.contains("needs the token from its URL"), noToken.body)

        await XCTAssertThrowsAsync(try await Page.open(wsURL.replacingOccurrences(of: server.token, with: "guess")))
        await XCTAssertThrowsAsync(try await Page.open(wsURL, headers: ["Origin": "http://evil.example"]))
        let ownPage = try await Page.open(wsURL, headers: ["Origin": "http://127.0.0.1:\(URL(string: url)!.port!)"])
        ownPage.close()
    }

    /// A WebSocket upgrade as a browser sends it, with `Origin` and `Host` as given (nil: none).
    private func upgrade(origin: String?, host: String?, token: String? = nil) throws -> (status: Int, body: String) {
        var head = [
            "GET /ws?token=\(token ?? server.token) HTTP/1.1", "Upgrade: websocket", "Connection: Upgrade",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
        ]
        if let host { head.append("Host: \(host)") }
        if let origin { head.append("Origin: \(origin)") }
        return try RawHTTP.send(head, port: port)
    }

    private var port: Int { URL(string: url)!.port! }

    func testASocketWithoutTheTokenGets403SayingSo() throws {
        let refused = try upgrade(origin: nil, host: "127.0.0.1:\(port)", token: "guess")
        XCTAssertEqual(refused.status, 403)
        XCTAssertTrue(refused.body.contains("needs the token from its URL"), refused.body)
    }

    func testOriginsOtherThanThePagesOwnGet403NamingTheAllowedOnes() throws {
        let allowed = "http://127.0.0.1:\(port), http://localhost:\(port), http://[::1]:\(port)"
        for origin in [
            "file://", "null", "chrome-extension://abcdefghijklmnop", "HTTP://EVIL.EXAMPLE:\(port)",
            "http://evil.example", "https://127.0.0.1:\(port)", "http://127.0.0.1:\(port + 1)",
        ] {
            let refused = try upgrade(origin: origin, host: "127.0.0.1:\(port)")
            XCTAssertEqual(refused.status, 403, origin)
            XCTAssertTrue(
                refused.body.contains("only from its own page (origin \(allowed)), not from \(origin)"),
                "\(origin): \(refused.body)")
        }
    }

    func testAnotherSiteNamePointedAtLoopbackGets403_DNSRebinding() throws {
        let evil = "evil.example:\(port)"
        let socket = try upgrade(origin: "http://\(evil)", host: evil)
        XCTAssertEqual(socket.status, 403)
        XCTAssertTrue(
            socket.body.contains(
                "answers only requests for 127.0.0.1:\(port), localhost:\(port), [::1]:\(port), not Host \(evil)"),
            socket.body)
        let page = try RawHTTP.send(["GET /?token=\(server.token) HTTP/1.1", "Host: \(evil)"], port: port)
        XCTAssertEqual(page.status, 403)
        XCTAssertFalse(page.body.contains("<script>"))
        let uppercase = try upgrade(origin: "HTTP://EVIL.EXAMPLE:\(port)", host: "EVIL.EXAMPLE:\(port)")
        XCTAssertEqual(uppercase.status, 403)
        let noHost = try RawHTTP.send(["GET /?token=\(server.token) HTTP/1.0"], port: port)
        XCTAssertEqual(noHost.status, 403)
        XCTAssertTrue(noHost.body.contains("not no Host header"), noHost.body)
    }

    func testThePagesOwnOriginsAndHostsPassInAnyCase() throws {
        for name in ["127.0.0.1", "localhost", "[::1]", "LocalHost"] {
            let opened = try upgrade(origin: "http://\(name):\(port)", host: "\(name):\(port)")
            XCTAssertEqual(opened.status, 101, "\(name): \(opened.body)")
            let page = try RawHTTP.send(["GET /?token=\(server.token) HTTP/1.1", "Host: \(name):\(port)"], port: port)
            XCTAssertEqual(page.status, 200, name)
        }
        XCTAssertEqual(try upgrade(origin: "HTTP://127.0.0.1:\(port)", host: "127.0.0.1:\(port)").status, 101)
        XCTAssertEqual(
            try upgrade(origin: nil, host: "127.0.0.1:\(port)").status, 101,
            "a client that is not a browser names no origin")
        XCTAssertEqual(
            try upgrade(origin: "ws://127.0.0.1", host: "127.0.0.1:\(port)").status, 101,
            "or a ws:// one, which no page can send")
    }

    func testThePageServesItsOwnScriptWhichParses() throws {
        let node = ["/usr/bin/node", "/usr/local/bin/node", "/usr/bin/nodejs"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let node else {
            throw XCTSkip("node is not installed, so the page's script was not checked; apt-get install nodejs")
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("inspector-\(UUID().uuidString).js")
        try InspectorPage.script.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: node)
        process.arguments = ["--check", file.path]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(
            process.terminationStatus, 0,
            String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
        XCTAssertTrue(InspectorPage.html.contains(InspectorPage.script))
    }

    private func get(_ address: String) async throws -> (status: Int, body: String) {
        let (data, response) = try await URLSession.shared.data(from: URL(string: address)!)
        return ((response as! HTTPURLResponse).statusCode, String(decoding: data, as: UTF8.self))
    }
}

func XCTAssertThrowsAsync<T>(
    _ body: @autoclosure () async throws -> T, file: StaticString = #filePath, line: UInt = #line
) async {
    do { _ = try await body(); XCTFail("did not throw", file: file, line: line) } catch {}
}

/// The counter plugin run by a `FeatureRun` on the real clock, its input fed by
/// the test, watched by an inspector served on a free loopback port.
final class InspectedRun: @unchecked Sendable {
    let hub: InspectorHub
    let server: InspectorServer
    let url: String
    let feed = Feed()
    private let done = DispatchSemaphore(value: 0)

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// - Parameters:
    ///   - path: the plugin (the counter by default).
    ///   - limits: what the inspector keeps.
    ///   - clock: the run's clock; on the virtual one, timed lines (`{"at":MS,"send":…}`) move it.
    ///   - observers: more observers of the run (a recorder).
    init(
        path: String = InspectedRun.root.appendingPathComponent("plugins/counter").path,
        limits: InspectorHub.Limits = .init(),
        clock: FeatureHost.Clock = .real, observers: [any RunObserver] = [],
        openInDebugger: (@Sendable ([String], [String], Int) throws -> Void)? = nil
    ) throws {
        // Made as moonflow run --inspect makes them: its refusals name the tool's flags.
        hub = InspectorHub(limits: limits, rerun: FeatureRun.rerun, advice: { FlagHints.add(to: $0) })
        server = InspectorServer(hub: hub, shownBy: "that moonflow run --inspect printed")
        url = try server.start()
        var options = FeatureRun.Options(path: path)
        options.format = .jsonl
        options.clock = clock
        options.observers = [hub] + observers
        options.handAnswers(to: hub)  // as moonflow run --inspect does
        options.openInDebugger = openInDebugger
        let input = InputSource(interactive: false, name: "test") { [feed] in feed.next() }
        let run = FeatureRun(options: options, input: input, write: { _ in })
        Thread { [done] in
            _ = run.run(); done.signal()
        }.start()
    }

    /// Ends the input and waits for the run to finish.
    func stop() {
        feed.end()
        _ = done.wait(timeout: .now() + 30)
    }

    /// Waits until the hub has sent `count` frames (the run got that far), for at most `seconds`.
    func waitForFrames(_ count: Int, within seconds: TimeInterval = 30) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while hub.frameCount < count {
            if Date() > deadline { throw Failure("the run sent \(hub.frameCount) frames, not \(count)") }
            Thread.sleep(forTimeInterval: 0.005)
        }
    }
}

/// What the run was asked to open in the debugger.
private final class Asked: @unchecked Sendable {
    let lock = NSLock()
    var calls: [([String], [String], Int)] = []
}
