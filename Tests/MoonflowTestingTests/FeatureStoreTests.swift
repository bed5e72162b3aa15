import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import MoonflowTesting
import XCTest

/// The Swift test store: the same send/receive/finish semantics the Lua specs get.
final class FeatureStoreTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        dir = (NSTemporaryDirectory() as NSString).appendingPathComponent("mfstore\(UUID().uuidString.prefix(8))")
        try write(
            "counter/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "counter",
              initial = { count = 0, log = {} },
              actions = { increment = { by = "integer?" }, later = { ms = "integer" }, boom = {} },
              mutations = { add = { n = "integer" }, fail = {} },
              handle = function(action, state, env)
                if action.type == "increment" then return { type = "add", n = action.by or 1 } end
                if action.type == "boom" then return { type = "fail" } end
                return mf.timer(action.ms, { type = "add", n = 1 })
              end,
              reduce = function(state, m)
                if m.type == "fail" then error("the reducer refused") end
                state.count = state.count + m.n
                if state.count % 10 == 0 then return state, { type = "milestone", count = state.count } end
                return state
              end,
            }
            """)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    private func write(_ path: String, _ text: String) throws {
        let full = (dir as NSString).appendingPathComponent(path)
        try FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: full, atomically: true, encoding: .utf8)
    }

    private func store(state: LuaValue? = nil, exhaustive: Bool = true) throws -> FeatureStore {
        try FeatureStore("counter", searchPaths: [dir], state: state, exhaustive: exhaustive)
    }

    private func failure(_ body: () throws -> Void) -> String {
        do { try body() } catch let f as FeatureStore.Failure { return f.message } catch {
            return "unexpected \(error)"
        }
        return "no failure"
    }

    func testSendAndReceiveWithChangesThenFinishPasses() throws {
        let s = try store()
        try s.send(["type": "increment", "by": 9]) { $0["count"] = 9 }
        try s.send(["type": "later", "ms": 50])
        s.advance(by: 50)
        try s.receive(["type": "add", "n": 1]) { $0["count"] = 10 }
        try s.receiveEffect(["type": "milestone", "count": 10])
        try s.finish()
        XCTAssertEqual(s.state["count"], 10)
    }

    func testAWrongChangeShowsTheDiffByPathAndTheCallersLine() throws {
        let s = try store()
        let message = failure { try s.send(["type": "increment", "by": 2]) { $0["count"] = 3 } }
        let sendLine = #line - 1
        XCTAssertTrue(
            message.contains(
                "FeatureStoreTests.swift:\(sendLine): State after send(increment) does not match the expected change:"),
            message)
        XCTAssertTrue(message.hasSuffix("  - count = 3\n  + count = 2"), message)
        XCTAssertFalse(message.contains("log"), "unchanged siblings are elided: \(message)")
    }

    func testTheStoresDiffIsTheStateDiffItsImportHandsTheTest() throws {
        let s = try store()
        let before = s.state
        let message = failure { try s.send(["type": "increment", "by": 2]) { $0["count"] = 3 } }
        var expected = before
        expected["count"] = 3
        // `import MoonflowTesting` alone brings StateDiff (MoonflowEvents'), as an app's test has it.
        let lines = StateDiff.lines(expected: expected, actual: s.state)
        XCTAssertEqual(lines, ["- count = 3", "+ count = 2"])
        XCTAssertTrue(message.hasSuffix(lines.map { "  " + $0 }.joined(separator: "\n")), message)
    }

    func testSendWithoutAChangeRequiresAnUnchangedState() throws {
        let s = try store()
        let message = failure { try s.send(["type": "increment"]) }
        XCTAssertTrue(message.hasSuffix("- count = 0\n  + count = 1"), message)
    }

    func testALeftoverTimerFailsFinishNamingItsAction() throws {
        let s = try store()
        try s.send(["type": "later", "ms": 100])
        let message = failure { try s.finish() }
        XCTAssertTrue(message.contains("1 stream was still in flight"), "an action's stream, not an effect: \(message)")
        XCTAssertTrue(message.contains("started by action later { ms = 100 }"), message)
    }

    func testSendWhileMutationsAreUnreceivedFailsNamingThem() throws {
        let s = try store()
        try s.send(["type": "later", "ms": 10])
        s.advance(by: 10)
        let message = failure { try s.send(["type": "increment"]) }
        XCTAssertTrue(message.contains("send(increment) was called while 1 mutation was not received yet"), message)
        XCTAssertTrue(message.contains("add { n = 1 } (from action later { ms = 10 })"), message)
    }

    func testReceiveOfAWrongMutationShowsItsDiff() throws {
        let s = try store()
        try s.send(["type": "later", "ms": 10])
        s.advance(by: 10)
        let message = failure { try s.receive(["type": "add", "n": 2]) }
        XCTAssertTrue(message.contains("- mutation.n = 2\n  + mutation.n = 1"), message)
    }

    func testReceiveWithNothingArrivedSaysWhatIsInFlight() throws {
        let s = try store()
        try s.send(["type": "later", "ms": 300])
        let message = failure { try s.receive(["type": "add", "n": 1]) }
        XCTAssertTrue(message.contains("no mutation arrived"), message)
        XCTAssertTrue(message.contains("the next timer is due at 300 ms"), message)
    }

    func testASchemaErrorOnSendFailsWithTheSchemaMessage() throws {
        let s = try store()
        let message = failure { try s.send(["type": "increment", "by": "x"]) }
        XCTAssertTrue(
            message.contains("send(increment) was refused: action 'increment': field 'by' must be an integer"), message)
    }

    func testErrorsMustBeAssertedAndTheStateStays() throws {
        let s = try store()
        try s.send(["type": "boom"])
        XCTAssertTrue(failure { try s.finish() }.contains("1 error was not asserted"))
        let t = try store()
        try t.send(["type": "boom"])
        try t.receiveError("the reducer refused")
        try t.finish()
        XCTAssertEqual(t.state["count"], 0)
    }

    func testUnassertedOutwardEffectsFailFinish() throws {
        let s = try store()
        try s.send(["type": "increment", "by": 10]) { $0["count"] = 10 }
        XCTAssertTrue(
            failure { try s.finish() }.contains("milestone { count = 10 } (from action increment { by = 10 })"))
    }

    func testStartsFromAGivenState() throws {
        let s = try store(state: ["count": 8, "log": .table(LuaTable())])
        try s.send(["type": "increment", "by": 2]) { $0["count"] = 10 }
        try s.receiveEffect(["type": "milestone", "count": 10])
        try s.finish()
    }

    func testNonExhaustiveChecksOnlyWhatTheTestStates() throws {
        let s = try store(exhaustive: false)
        try s.send(["type": "later", "ms": 10])
        try s.send(["type": "later", "ms": 20])
        s.advance(by: 20)
        try s.receive(["type": "add", "n": 1]) { $0["count"] = 1 }
        try s.send(["type": "later", "ms": 5])
        try s.finish()
    }

    func testSkipInFlightCancelsTheTimer() throws {
        let s = try store()
        try s.send(["type": "later", "ms": 100])
        s.skipInFlight()
        s.advance(by: 200)
        try s.finish()
        XCTAssertEqual(s.state["count"], 0)
    }

    /// A blocking store takes typed service stubs too, and waits for the answer.
    func testTheBlockingStoreTakesTypedServiceStubs() throws {
        try write(
            "doubler/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "doubler",
              initial = { n = 0 },
              actions = { double = { n = "integer" } },
              mutations = { set = { n = "integer" } },
              handle = function(action, state, env)
                return env.services.double(action.n):map(function(n) return { type = "set", n = n } end)
              end,
              reduce = function(state, m) state.n = m.n; return state end,
            }
            """)
        let s = try FeatureStore(
            "doubler", searchPaths: [dir], services: [.stub("double") { (n: Int) async throws -> Int in 2 * n }])
        try s.send(["type": "double", "n": 21])
        try s.receive(["type": "set", "n": 42]) { $0["n"] = 42 }
        try s.finish()
    }

    func testStoresKeepClocksOfTheirOwn() throws {
        let a = try store(), b = try store()
        try a.send(["type": "later", "ms": 100])
        b.advance(by: 500)
        XCTAssertEqual(a.clock.now, 0)
        XCTAssertEqual(a.state["count"], 0, "b's clock does not fire a's timer")
        a.advance(by: 100)
        try a.receive(["type": "add", "n": 1]) { $0["count"] = 1 }
        try a.finish()
    }
}
