import Foundation
import LuaKit
import MoonflowDebug
import MoonflowHost
import MoonflowHostTools

// What the debugger's hook costs per action of plugins/counter (virtual clock, sends in
// batches of 1,000, a state listener, the default budgets): with no debugger (no hook set,
// as every run without --debug), with a debugger serving the state and no breakpoint, and
// with breakpoints that are not in the running functions (one in another plugin's file, one
// in counter's `invariants`, which a plain run never calls): the hook then takes calls and
// returns only. The three run in turn, round after round, so the machine's load falls on
// each alike; the median of every round's runs. Issue 51's targets: the first as (c) of the
// feature suite, the others at most 2x it. A fourth run is a debugger on a run that can go back
// (`DebugController.repeats(by:)`, as `moonflow run --clock virtual --debug` serves it): the hook
// counts every line of the plugin's file, and no reverse request is made; beside the second, the
// same run with counting off (what a virtual-clock run under the debugger cost before).

func debugBench() {
    let actions = BenchEnvironment.scaled(200_000)
    let rounds = 5
    print(
        "counter feature under a debugger, \(actions) actions per run, \(rounds) rounds of the four in turn, ns per action"
    )
    var samples: [String: [Double]] = [:]
    let modes = [
        "no debugger", "debugger, no breakpoint", "debugger, breakpoints elsewhere",
        "debugger, counting lines to go back",
    ]
    for _ in 0..<rounds {
        for (index, mode) in modes.enumerated() {
            guard let ns = attempt(mode, { try debuggedCounter(actions: actions, mode: index) }) else { return }
            samples[mode, default: []].append(ns)
        }
    }
    func median(_ mode: String) -> Double? {
        guard let all = samples[mode]?.sorted(), !all.isEmpty else { return nil }
        return all[all.count / 2]
    }
    for mode in modes { print(row(mode, median(mode), "ns/action")) }
    let plain = median(modes[0])
    for mode in modes.dropFirst() {
        print(ratioRow("\(mode) / none (target <= 2x)", median(mode), plain))
    }
    print(ratioRow("counting lines / not counting (no reverse request)", median(modes[3]), median(modes[1])))
}

/// ns per action of plugins/counter; `mode` 0: no debugger, 1: served, no breakpoint, 2: served
/// with breakpoints outside the functions that run, 3: served as a run that can go back (every
/// line of the plugin's file counted), no breakpoint.
private func debuggedCounter(actions: Int, mode: Int) throws -> Double {
    let host = try FeatureHost(configuration: .init(searchPaths: [BenchEnvironment.path("plugins")], clock: .virtual))
    guard let clock = host.testScheduler else { throw BenchError("the host is not on the virtual clock") }
    let controller = DebugController(name: "bench")
    if mode == 3 { controller.repeats {} }
    if mode > 0 { guard controller.serve(host.lua) else { throw BenchError("the debugger could not serve the state") } }
    if mode == 2 {
        _ = controller.setBreakpoints(
            path: BenchEnvironment.path("plugins/colors/init.lua"), [BreakpointRequest(line: 20)])
        _ = controller.setBreakpoints(
            path: BenchEnvironment.path("plugins/counter/init.lua"), [BreakpointRequest(line: 27)])
    }
    let feature = try host.load("counter")
    let sink = CountSink()
    let observation = feature.outlet.add(kinds: .state) { event in
        if case .state(let state, let seq) = event, seq > 0 { sink.count = state["count"]?.intValue ?? -1 }
    }
    defer { observation.dispose() }
    feature.start()
    let action: LuaValue = ["type": "increment"]
    var failed: (any Error)?
    let ns = medianNanos(runs: 1, iterations: actions) { n in
        var left = n
        while left > 0 {
            let k = min(1000, left)
            for _ in 0..<k {
                do { try feature.send(action) } catch { failed = error }
            }
            clock.advance(by: 0)
            left -= k
        }
    }
    if let failed { throw failed }
    guard sink.count == Int64(actions) else {
        throw BenchError("the observer saw count \(sink.count), expected \(actions)")
    }
    return ns
}
