import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import Runtime
import Streams

// Ns per action for the same counter feature,
// (a) its handle/reduce in a pure Lua loop under lua5.4 (bench/counter_loop.lua),
// (b) a C host driving them through the Lua C API (bench/counter_capi.c),
// (c) plugins/counter through Moonflow's Swift API (FeatureHost on the virtual clock),
// (d) the same reducer in native Swift through the Runtime Interactor,
// (e) the same counter natively in Swift on OpenCombine, ReactorKit-style with state
//     feedback (bench/opencombine-counter, a package of its own).
// Every variant has one observer reading `count` after every action.

/// What an observer writes, so that no work can be optimized away.
final class CountSink: @unchecked Sendable {
    var count: Int64 = 0
}

/// Prints ns per action of (a)-(e), the ratios of (c) to the others, and whether c <= 1.5 b.
func featureBench() {
    let actions = BenchEnvironment.scaled(1_000_000)
    let runs = 5
    let budgets = FeatureHost.Configuration(searchPaths: [BenchEnvironment.path("plugins")], clock: .virtual)
    if ProcessInfo.processInfo.environment["MOONFLOW_BENCH_ONLY_C"] != nil {
        // For a profiler: (c) alone (MOONFLOW_BENCH_BUDGETS=time|memory|none: only those budgets;
        var chosen = budgets
        switch ProcessInfo.processInfo.environment["MOONFLOW_BENCH_BUDGETS"] {
        case "time": chosen.memoryLimitMB = nil
        case "memory": chosen.timeLimitMs = nil
        case "none": chosen.memoryLimitMB = nil; chosen.timeLimitMs = nil
        default: break
        }
        // MOONFLOW_BENCH_INPUT=json|parsed: actions as JSON text, straight into Lua or through a LuaValue.
        let input: CounterInput =
            switch ProcessInfo.processInfo.environment["MOONFLOW_BENCH_INPUT"] {
            case "json": .json
            case "parsed": .jsonThroughValue
            default: .value
            }
        // MOONFLOW_BENCH_LISTENER=none: no state listener (the state read after each batch).
        let kinds: FeatureEvent.Kinds =
            ProcessInfo.processInfo.environment["MOONFLOW_BENCH_LISTENER"] == "none" ? [] : .state
        print(
            row(
                "(c) Moonflow: send 1,000, advance(by: 0)",
                attempt("(c)") {
                    try moonflowCounter(chosen, actions: actions, runs: runs, batch: 1000, kinds: kinds, input: input)
                }, "ns/action"))
        return
    }
    print("counter feature, \(actions) actions per run, median of \(runs) runs, ns per action")

    let a =
        attempt("(a) lua5.4 bench/counter_loop.lua") {
            try runProgram(BenchEnvironment.lua, ["bench/counter_loop.lua", "\(actions)", "\(runs)"])["counter_loop_ns"]
        } ?? nil
    let capi = attempt("(b) \(BenchEnvironment.capi)") {
        try runProgram(BenchEnvironment.capi, [BenchEnvironment.root, "\(actions)", "\(runs)"])
    }
    let b = capi?["capi_ns"]

    var unbudgeted = budgets
    unbudgeted.timeLimitMs = nil
    unbudgeted.memoryLimitMB = nil
    // (c) the cheapest correct way: send in batches of 1,000, then let the virtual clock run them;
    // the host keeps its default budgets (what `moonflow run` uses). Two other ways, on fewer actions.
    let few = max(1, actions / 10)
    let c = attempt("(c) batches") { try moonflowCounter(budgets, actions: actions, runs: runs, batch: 1000) }
    let each = attempt("(c) send + advance") { try moonflowCounter(budgets, actions: few, runs: runs, batch: 1) }
    let everyEvent = attempt("(c) every event") {
        try moonflowCounter(budgets, actions: few, runs: runs, batch: 1000, kinds: .all)
    }
    let unheard = attempt("(c) no state listener") {
        try moonflowCounter(budgets, actions: few, runs: runs, batch: 1000, kinds: [])
    }
    let free = attempt("(c) no budgets") { try moonflowCounter(unbudgeted, actions: few, runs: runs, batch: 1000) }
    // Actions arriving as JSON text (a web view's or a socket's messages), sent alternately both ways.
    let viaValue = attempt("(c) JSON parsed to a LuaValue") {
        try moonflowCounter(budgets, actions: few, runs: runs, batch: 1000, input: .jsonThroughValue)
    }
    let straight = attempt("(c) JSON straight into Lua") {
        try moonflowCounter(budgets, actions: few, runs: runs, batch: 1000, input: .json)
    }
    let bridgeOnly = attempt("(c) on LuaKit alone") { try luaKitCounter(actions: actions, runs: runs) }
    let d = nativeCounter(actions: actions, runs: runs)
    let e =
        attempt("(e) \(BenchEnvironment.openCombine)") {
            try runProgram(BenchEnvironment.openCombine, ["\(actions)", "\(runs)"])["opencombine_ns"]
        } ?? nil

    print(row("(a) pure Lua loop under lua5.4", a, "ns/action"))
    print(row("(b) C host: lua_pcall handle, reduce", b, "ns/action"))
    print(row("    (b) with a fresh action table each", capi?["capi_fresh_action_ns"], "ns/action"))
    print(row("(c) Moonflow: send 1,000, advance(by: 0)", c, "ns/action"))
    print(row("    (c) send, advance(by: 0) each [\(few)]", each, "ns/action"))
    print(row("    (c) observer of every event [\(few)]", everyEvent, "ns/action"))
    print(row("    (c) no listener, state read per 1,000 [\(few)]", unheard, "ns/action"))
    print(row("    (c) no time/memory budget [\(few)]", free, "ns/action"))
    print(row("    (c)'s Lua calls on LuaKit alone", bridgeOnly, "ns/action"))
    print(row("    (c) JSON text: LuaValue(json:), send [\(few)]", viaValue, "ns/action"))
    print(row("    (c) JSON text: send(json:), into Lua [\(few)]", straight, "ns/action"))
    print(row("(d) native Swift reducer via Interactor", d, "ns/action"))
    print(row("(e) native Swift on OpenCombine 0.14, feedback", e, "ns/action"))
    print(ratioRow("c/a", c, a))
    print(ratioRow("c/b", c, b))
    print(ratioRow("c/d", c, d))
    print(ratioRow("c/e", c, e))
    print(
        "  target c <= 2.0 b: \(verdict(c.flatMap { c in b.map { c <= 2.0 * $0 } })) (stretch 1.5 b: \(verdict(c.flatMap { c in b.map { c <= 1.5 * $0 } })))"
    )
    print("  target c below the OpenCombine peer (e): \(verdict(c.flatMap { c in e.map { c < $0 } }))")
}

/// plugins/counter through `FeatureHost` on the virtual clock: `batch` sends, then
/// `advance(by: 0)` runs them, one listener on `outlet` reading `count` from each new state.
/// The listener asks for state events only (as a view model does), unless `kinds` says
/// otherwise: with `.all` every mutation is copied out of Lua for it, as `moonflow run` needs;
/// with none there is no listener, and `count` is read from `feature.state` after each batch
/// (the reduces' writes wait in Lua until then).
///
/// - Returns: the median ns per action of `runs` runs of `actions` actions.
/// - Throws: when the plugin does not load or the observer missed a state.
func moonflowCounter(
    _ configuration: FeatureHost.Configuration, actions: Int, runs: Int, batch: Int,
    kinds: FeatureEvent.Kinds = .state, input: CounterInput = .value
) throws -> Double {
    let host = try FeatureHost(configuration: configuration)
    guard let clock = host.testScheduler else { throw BenchError("the host is not on the virtual clock") }
    let feature = try host.load("counter")
    let sink = CountSink()
    let observation =
        kinds.isEmpty
        ? nil
        : feature.outlet.add(kinds: kinds) { event in
            if case .state(let state, let seq) = event, seq > 0 { sink.count = state["count"]?.intValue ?? -1 }
        }
    defer { observation?.dispose() }
    feature.start()
    let action: LuaValue = ["type": "increment"]
    let json = #"{"type":"increment"}"#
    var failed: (any Error)?
    let ns = medianNanos(runs: runs, iterations: actions) { n in
        var left = n
        while left > 0 {
            let k = min(batch, left)
            for _ in 0..<k {
                do {
                    switch input {
                    case .value: try feature.send(action)
                    case .jsonThroughValue: try feature.send(try LuaValue(json: json))
                    case .json: try feature.send(json: json)
                    }
                } catch { failed = error }
            }
            clock.advance(by: 0)
            if kinds.isEmpty { sink.count = feature.state["count"]?.intValue ?? -1 }
            left -= k
        }
    }
    if let failed { throw failed }
    guard sink.count == Int64(actions * runs) else {
        throw BenchError("the observer saw count \(sink.count), expected \(actions * runs)")
    }
    return ns
}

/// How (c)'s actions arrive: as values, or as JSON text parsed into a `LuaValue` first or
/// straight into Lua (`send(json:)`).
enum CounterInput { case value, jsonThroughValue, json }

/// What (c) asks of the bridge per action, with no loop around it: call handle with the
/// action, copy the mutation out, call reduce with it, copy the state out, read `count`.
/// The state table stays in Lua; budgets as the host's defaults.
///
/// - Returns: the median ns per action of `runs` runs of `actions` actions.
func luaKitCounter(actions: Int, runs: Int) throws -> Double {
    let lua = try LuaState(memoryLimit: 512 << 20, timeLimitMs: 1000)
    let loader = try lua.call(try lua.load(file: BenchEnvironment.path("bench/counter_def.lua")), []) { try $0.ref(1) }
    let plugin = LuaPush.value(.string(LuaString(BenchEnvironment.path("plugins/counter/init.lua"))))
    let definition = try lua.call(loader, [plugin]) { try $0.ref(1) }
    let handle = try lua.rawGet(definition, "handle") { try $0.function(1) }
    let reduce = try lua.rawGet(definition, "reduce") { try $0.function(1) }
    let state = try lua.ref(.value(["count": 0]))
    let action: LuaValue = ["type": "increment"]
    let sink = CountSink()
    var failed: (any Error)?
    let ns = medianNanos(runs: runs, iterations: actions) { n in
        do {
            for _ in 0..<n {
                let mutation = try lua.call(handle, [.value(action), .ref(state)]) { try $0.value(1, path: "mutation") }
                let snapshot = try lua.call(reduce, [.ref(state), .value(mutation)]) { try $0.value(1, path: "state") }
                sink.count = snapshot["count"]?.intValue ?? -1
            }
        } catch { failed = error }
    }
    if let failed { throw failed }
    guard sink.count == Int64(actions * runs) else {
        throw BenchError("the state's count is \(sink.count), expected \(actions * runs)")
    }
    return ns
}

private enum NativeAction: Sendable { case increment(by: Int?), decrement, reset }
private enum NativeMutation: Sendable { case add(Int), set(Int) }
private struct NativeState: Sendable { var count = 0 }
private struct Milestone: Sendable { let count: Int }

/// plugins/counter's handle and reduce written in Swift, milestone effect included.
@inline(never)
private func nativeHandle(_ action: NativeAction, _ state: NativeState) -> Handled<NativeMutation> {
    switch action {
    case .increment(let by): .one(.add(by ?? 1))
    case .decrement: .one(.add(-1))
    case .reset: .one(.set(0))
    }
}

@inline(never)
private func nativeReduce(_ state: inout NativeState, _ mutation: NativeMutation) -> Milestone? {
    switch mutation {
    case .add(let n):
        state.count += n
        return state.count % 10 == 0 ? Milestone(count: state.count) : nil
    case .set(let value):
        state.count = value
        return nil
    }
}

/// (d): the native counter through `Interactor` (immediate schedulers), one `observeState` observer.
private func nativeCounter(actions: Int, runs: Int) -> Double {
    let sink = CountSink()
    let counter = Interactor<NativeState, NativeAction, NativeMutation, Milestone>(
        initial: NativeState(),
        handle: { action, state in nativeHandle(action, state) },
        reduce: { state, mutation in nativeReduce(&state, mutation) })
    let subscription = counter.observeState { sink.count = Int64($0.count) }
    defer { subscription.dispose(); counter.dispose() }
    let ns = medianNanos(runs: runs, iterations: actions) { n in
        for _ in 0..<n { counter.send(.increment(by: nil)) }
    }
    precondition(sink.count == Int64(actions * runs), "the native counter's observer missed a state")
    return ns
}
