import Foundation
import LuaKit
import MoonflowEvents
import MoonflowLua
import MoonflowRun
import PluginFixtures
import XCTest

/// `moonflow run --inspect` (and `--record`) hands every event to a `SessionRecorder`: what it
/// keeps must not grow with the number of actions, however long the run (issue 64).
final class SessionRecorderMemoryTests: XCTestCase {
    private struct NoDispatch: RunDispatcher {
        func dispatch(_ action: LuaValue) throws {}
        var inFlight: [FeatureFlight] { [] }
        func restart() throws {}
    }

    /// The recorder `run --inspect` adds without `--record` (`handAnswers`) keeps a count of
    /// the actions it saw, for where a service answer arrives; 100,000 actions once kept
    /// two objects each (about 10 MB resident), for as long as the run lived.
    func testTheRecorderKeepsNoMemoryPerAction() throws {
        let recorder = SessionRecorder(answersOnly: { _ in })
        recorder.started(
            RunDescription(
                name: "counter", version: 1, path: "plugins/counter", actions: nil, clock: .real, now: { 5 }),
            dispatch: NoDispatch())
        let action = FeatureEvent.action(["type": "increment"])
        for _ in 0..<1_000 { recorder.observe(action, t: 5, cause: nil) }
        let before = try MemoryInUse.bytes()
        for _ in 0..<100_000 { recorder.observe(action, t: 5, cause: nil) }
        let grown = try MemoryInUse.bytes() - before
        XCTAssertLessThan(
            grown, 2 << 20,
            "100,000 actions grew \(MemoryInUse.measure) by \(grown) bytes (\(grown / 100_000) per action)")
    }
}
