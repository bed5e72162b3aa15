import Foundation
import LuaKit
import MoonflowHost
import MoonflowLua

// Issue "examples + bench", DESIGN §10: publishing a 1,000-row state to a Swift
// observer after a one-field change (bench/rows_feature.lua), send -> observer,
// against cjson.encode of the same table under lua5.4 (bench/rows.lua).

/// A timestamp the observer writes when the new state reaches it.
private final class Arrival: @unchecked Sendable {
    var at: UInt64 = 0
    var score: Double = 0
}

/// Prints µs from `send` to the observer holding the new 1,000-row state, beside cjson.encode.
func publishBench() {
    let actions = BenchEnvironment.scaled(200)
    let runs = 9
    let publish = attempt("rows feature") { try publishNanos(actions: actions, runs: runs) }.map { $0 / 1000 }
    let cjson = attempt("lua5.4 bench/rows.lua") {
        try runProgram(BenchEnvironment.lua, ["bench/rows.lua", "1000", "21"])["cjson_encode_us"]
    } ?? nil
    print("1,000-row state, one field changed per action (median of \(runs) runs of \(actions) actions)")
    print(row("send -> Swift observer (virtual clock)", publish, "µs"))
    print(row("cjson.encode of the same table, lua5.4", cjson, "µs"))
    print(ratioRow("publish / cjson.encode", publish, cjson))
    print("  target publish < cjson.encode: \(verdict(publish.flatMap { p in cjson.map { p < $0 } }))")
}

/// Median ns from `send` to the observer, per action: each action is sent, then the
/// virtual clock runs it, and the observer stamps the time it got the state.
private func publishNanos(actions: Int, runs: Int) throws -> Double {
    let host = try FeatureHost(configuration: .init(searchPaths: [BenchEnvironment.path("bench")], clock: .virtual))
    guard let clock = host.testScheduler else { throw BenchError("the host is not on the virtual clock") }
    let feature = try host.load(BenchEnvironment.path("bench/rows_feature.lua"))
    let arrival = Arrival()
    let observation = feature.outlet.add(kinds: .state) { event in
        guard case .state(let state, let seq) = event, seq > 0 else { return }
        arrival.at = DispatchTime.now().uptimeNanoseconds
        arrival.score = state["rows"]?[0]?["score"]?.doubleValue ?? -1
    }
    defer { observation.dispose() }
    feature.start()
    let action: LuaValue = ["type": "touch", "id": 1]
    var samples: [Double] = []
    var failed: (any Error)?
    for _ in 0..<runs {
        var total: UInt64 = 0
        for _ in 0..<actions {
            let start = DispatchTime.now().uptimeNanoseconds
            do { try feature.send(action) } catch { failed = error }
            clock.advance(by: 0)
            guard arrival.at >= start else { throw BenchError("the observer did not get the state of an action") }
            total += arrival.at - start
        }
        samples.append(Double(total) / Double(actions))
    }
    if let failed { throw failed }
    let expected = 1.5 + 0.5 * Double(actions * runs)
    guard arrival.score == expected else {
        throw BenchError("the observer saw score \(arrival.score), expected \(expected)")
    }
    samples.sort()
    return samples[samples.count / 2]
}
