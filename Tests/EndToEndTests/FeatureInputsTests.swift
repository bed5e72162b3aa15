import Foundation
import XCTest

/// Time and randomness as a feature's inputs (`FeatureInputs`): the plain `os.time`, `os.date`,
/// `os.clock` and `math.random` follow the virtual clock and the run's seed, and a real-clock
/// recording holds every value read, so its replay is identical.
final class FeatureInputsTests: XCTestCase {
    private var scratch: URL!

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("moonflow-inputs-\(UUID().uuidString)")
        let plugin = scratch.appendingPathComponent("plugins/dice")
        try FileManager.default.createDirectory(at: plugin, withIntermediateDirectories: true)
        try """
        local mf = require "moonflow"
        return mf.feature {
          name = "dice",
          initial = { rolls = {}, at = 0, day = "", clock = 0 },
          actions = { roll = {} },
          mutations = { rolled = { n = "integer", at = "integer", day = "string", clock = "number" } },
          handle = function()
            return { type = "rolled", n = math.random(1, 1000000), at = os.time(),
                     day = os.date("!%Y-%m-%d %H:%M:%S"), clock = os.clock() }
          end,
          reduce = function(state, m)
            state.rolls[#state.rolls + 1] = m.n
            state.at, state.day, state.clock = m.at, m.day, m.clock
            return state
          end,
        }
        """.write(to: plugin.appendingPathComponent("init.lua"), atomically: true, encoding: .utf8)
        try """
        {"type":"roll"}
        {"at":600000,"send":{"type":"roll"}}
        """.write(to: scratch.appendingPathComponent("rolls.jsonl"), atomically: true, encoding: .utf8)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: scratch) }

    /// The last state line of a jsonl run.
    private func lastState(_ arguments: [String]) throws -> String {
        let result = try Moonflow.run(
            ["run", "plugins/dice", "--actions", "rolls.jsonl", "--format", "jsonl"] + arguments, in: scratch)
        XCTAssertEqual(result.status, 0, result.stderr)
        return result.stdout.split(separator: "\n").last(where: { $0.contains(#""event":"state""#) }).map(String.init)
            ?? ""
    }

    func testOsTimeTenVirtualMinutesLaterIs600SecondsLaterFromJanuaryFirst2026() throws {
        let state = try lastState(["--clock", "virtual"])
        // 1767225600 is 2026-01-01T00:00:00Z; the second roll came 600,000 virtual ms later.
        XCTAssertTrue(state.contains(#""at":1767226200"#), state)
        XCTAssertTrue(state.contains(#""day":"2026-01-01 00:10:00""#), state)
        XCTAssertTrue(state.contains(#""clock":600.0"#), state)
    }

    func testTwoVirtualRunsDrawTheSameRandomsAndSeedChangesThem() throws {
        let first = try lastState(["--clock", "virtual"])
        XCTAssertEqual(try lastState(["--clock", "virtual"]), first)
        XCTAssertEqual(try lastState(["--clock", "virtual", "--sandbox"]), first)
        let seeded = try lastState(["--clock", "virtual", "--seed", "7"])
        XCTAssertNotEqual(seeded, first)
        XCTAssertEqual(try lastState(["--clock", "virtual", "--seed", "7"]), seeded)
    }

    func testARealClockRecordingOfTimeAndRandomsReplaysIdenticalEveryTime() throws {
        try "{\"type\":\"roll\"}\n{\"type\":\"roll\"}\n".write(
            to: scratch.appendingPathComponent("rolls.jsonl"), atomically: true, encoding: .utf8)
        let recorded = try Moonflow.run(
            ["run", "plugins/dice", "--actions", "rolls.jsonl", "--format", "jsonl", "--record", "session.jsonl"],
            in: scratch)
        XCTAssertEqual(recorded.status, 0, recorded.stderr)
        let text = try String(contentsOf: scratch.appendingPathComponent("session.jsonl"), encoding: .utf8)
        XCTAssertTrue(text.contains(#""clock":"real","moonflow":"0.1.0","effects":true,"seed":"#), text)
        XCTAssertTrue(text.contains(#"{"read":"time","value":"#), text)
        for _ in 0..<3 {
            let replay = try Moonflow.run(["replay", "session.jsonl"], in: scratch)
            XCTAssertEqual(replay.stdout, "replay session.jsonl: identical (2 inputs, 3 states)\n", replay.stderr)
        }
        // Rewritten, the recording keeps what was read, so it still replays identical.
        XCTAssertEqual(try Moonflow.run(["replay", "session.jsonl", "--update"], in: scratch).status, 0)
        let replay = try Moonflow.run(["replay", "session.jsonl"], in: scratch)
        XCTAssertEqual(replay.stdout, "replay session.jsonl: identical (2 inputs, 3 states)\n", replay.stderr)
    }

    func testExecKeepsLuasOwnTimeAndRandoms() throws {
        try "print(os.time() ~= 1767225600, math.random(1, 1 << 40))".write(
            to: scratch.appendingPathComponent("script.lua"), atomically: true, encoding: .utf8)
        let first = try Moonflow.run(["exec", "script.lua"], in: scratch)
        let second = try Moonflow.run(["exec", "script.lua"], in: scratch)
        XCTAssertTrue(first.stdout.hasPrefix("true\t"), first.stdout + first.stderr)
        XCTAssertNotEqual(first.stdout, second.stdout)
    }
}
