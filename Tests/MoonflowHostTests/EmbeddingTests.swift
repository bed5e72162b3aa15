import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import XCTest

/// The Swift embedding API: `Encodable` actions, `Decodable` state, the `states`, `effects` and
/// `errors` async sequences, and a host on the real clock.
final class EmbeddingTests: XCTestCase {
    static let counter = """
        local mf = require "moonflow"
        return mf.feature {
          name = "counter",
          initial = { count = 0, label = "start" },
          actions = { increment = { by = "integer?" }, later = { ms = "integer" }, crash = {} },
          mutations = { add = { n = "integer" }, crash = {} },
          handle = function(action)
            if action.type == "increment" then return { type = "add", n = action.by or 1 } end
            if action.type == "later" then return mf.timer(action.ms, { type = "add", n = 100 }) end
            return { type = "crash" }
          end,
          reduce = function(state, m)
            if m.type == "crash" then error("cannot crash") end
            state.count = state.count + m.n
            state.label = "at " .. state.count
            if state.count % 10 == 0 then return state, { type = "milestone", count = state.count } end
            return state
          end,
        }
        """

    struct Increment: Encodable { let type = "increment"; let by: Int? }
    struct Later: Encodable { let type = "later"; let ms: Int }
    struct CounterView: Decodable, Equatable { let count: Int; let label: String }

    func testEncodableActionsAndDecodedState() throws {
        let h = try Harness(["counter/init.lua": Self.counter])
        try h.load("counter")
        XCTAssertEqual(try h.feature.decodeState(CounterView.self), CounterView(count: 0, label: "start"))
        try h.feature.send(encoding: Increment(by: 4))
        try h.feature.send(encoding: Increment(by: nil))
        h.settle()
        XCTAssertEqual(try h.feature.decodeState(CounterView.self), CounterView(count: 5, label: "at 5"))
        struct Wrong: Encodable { let type = "increment"; let by = "lots" }
        XCTAssertThrowsError(try h.feature.send(encoding: Wrong())) { error in
            XCTAssertEqual(
                (error as? FeatureError)?.message,
                "action 'increment': field 'by' must be an integer (got string \"lots\")")
        }
    }

    func testStatesEffectsAndErrorsAsAsyncSequences() async throws {
        let h = try Harness(["counter/init.lua": Self.counter])
        try h.load("counter")
        let states = h.feature.states
        let effects = h.feature.effects
        let errors = h.feature.errors
        try h.feature.send(encoding: Increment(by: 3))
        try h.feature.send(encoding: Increment(by: 7))
        try h.feature.send(["type": "crash"])
        h.settle()

        var stateIterator = states.makeAsyncIterator()
        let current = await stateIterator.next()
        let first = await stateIterator.next()
        let second = await stateIterator.next()
        XCTAssertEqual(current, ["count": 0, "label": "start"], "the current state comes first")
        XCTAssertEqual(first, ["count": 3, "label": "at 3"])
        XCTAssertEqual(second, ["count": 10, "label": "at 10"])
        var effectIterator = effects.makeAsyncIterator()
        let effect = await effectIterator.next()
        XCTAssertEqual(effect, ["type": "milestone", "count": 10])
        var errorIterator = errors.makeAsyncIterator()
        let failure = await errorIterator.next()
        XCTAssertEqual(failure?.message, "cannot crash", "the message alone: \(String(describing: failure))")
        XCTAssertEqual(failure?.location, "counter/init.lua:13")
        XCTAssertEqual(failure?.stage, .reduce)
        XCTAssertEqual(failure?.action, ["type": "crash"])
        XCTAssertTrue(
            failure?.traceback?.hasPrefix("stack traceback:") == true, "\(String(describing: failure?.traceback))")
        XCTAssertEqual(try h.feature.decodeState(CounterView.self), CounterView(count: 10, label: "at 10"))
    }

    func testARealClockHostDeliversATimerDrivenMutation() async throws {
        let dir = (NSTemporaryDirectory() as NSString).appendingPathComponent("mflua-real-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: "\(dir)/counter", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.counter.write(toFile: "\(dir)/counter/init.lua", atomically: true, encoding: .utf8)

        let host = try FeatureHost(configuration: .init(searchPaths: [dir], clock: .real))
        XCTAssertNil(host.testScheduler)
        let feature = try await host.load("counter")
        let states = feature.states
        host.perform { feature.start() }
        let started = Date()
        try feature.send(encoding: Later(ms: 30))
        let state = try await withTimeout(10) {
            for await s in states where s != ["count": 0, "label": "start"] { return s }
            return LuaValue.nil
        }
        XCTAssertEqual(state, ["count": 100, "label": "at 100"])
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.025, "the timer ran on the real clock")
        XCTAssertEqual(try feature.decodeState(CounterView.self), CounterView(count: 100, label: "at 100"))
    }
}
