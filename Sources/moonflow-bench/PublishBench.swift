import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua

// Publishing a 1,000-row state to a Swift
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
    let cjson =
        attempt("lua5.4 bench/rows.lua") {
            try runProgram(BenchEnvironment.lua, ["bench/rows.lua", "1000", "21"])["cjson_encode_us"]
        } ?? nil
    print("1,000-row state, one field changed per action (median of \(runs) runs of \(actions) actions)")
    print(row("send -> Swift observer (virtual clock)", publish, "µs"))
    print(row("cjson.encode of the same table, lua5.4", cjson, "µs"))
    print(ratioRow("publish / cjson.encode", publish, cjson))
    print("  target publish < cjson.encode: \(verdict(publish.flatMap { p in cjson.map { p < $0 } }))")
    // What `moonflow run --format jsonl` does per state event with the whole state.
    let encoded = attempt("rows feature, jsonl") { try stateJSONNanos(actions: actions) }
    print("the whole 1,000-row state as JSON, per state event (median of \(actions) events, alternated)")
    print(row("from the snapshot (LuaValue.jsonBytes)", encoded.map { $0.snapshot / 1000 }, "µs"))
    print(row("straight from the Lua table (stateJSON)", encoded.map { $0.lua / 1000 }, "µs"))
    print(ratioRow("straight / snapshot", encoded.map { $0.lua }, encoded.map { $0.snapshot }))
    print(ratioRow("straight / cjson.encode", encoded.map { $0.lua / 1000 }, cjson))
}

/// Median ns of writing the whole state as JSON in a state observer, both ways,
/// alternating which goes first; checks that both give the same text.
private func stateJSONNanos(actions: Int) throws -> (snapshot: Double, lua: Double) {
    let host = try FeatureHost(configuration: .init(searchPaths: [BenchEnvironment.path("bench")], clock: .virtual))
    guard let clock = host.testScheduler else { throw BenchError("the host is not on the virtual clock") }
    guard let feature = try host.load(BenchEnvironment.path("bench/rows_feature.lua")) as? LuaFeature else {
        throw BenchError("rows_feature.lua is not a single feature")
    }
    final class Samples: @unchecked Sendable {
        var snapshot: [Double] = []
        var lua: [Double] = []
        var failure: (any Error)?
    }
    let samples = Samples()
    let observation = feature.outlet.add(kinds: .state) { event in
        guard case .state(let state, let seq) = event else { return }
        do {
            var texts: [[UInt8]] = [[], []]
            for which in seq % 2 == 0 ? [0, 1] : [1, 0] {
                let start = DispatchTime.now().uptimeNanoseconds
                texts[which] = which == 0 ? try state.jsonBytes(root: "state") : try feature.stateJSON()
                let ns = Double(DispatchTime.now().uptimeNanoseconds - start)
                if which == 0 { samples.snapshot.append(ns) } else { samples.lua.append(ns) }
            }
            if texts[0] != texts[1] { throw BenchError("seq \(seq): the two encodings differ") }
        } catch { samples.failure = error }
    }
    defer { observation.dispose() }
    feature.start()
    for _ in 0..<actions {
        try feature.send(["type": "touch", "id": 1])
        clock.advance(by: 0)
    }
    if let failure = samples.failure { throw failure }
    func median(_ v: [Double]) -> Double { v.sorted()[v.count / 2] }
    return (median(samples.snapshot), median(samples.lua))
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
