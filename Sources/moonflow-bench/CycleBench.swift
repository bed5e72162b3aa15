import Foundation
import LuaKit
import MoonflowHost
import MoonflowLua

// Cycles: one long-lived host loads a feature, observes it, sends it two actions (through a
// Lua service and a Swift one, whose answer is an outward effect) and a third that starts a
// 60-s timer, and disposes of it with the timer running, again and again, as an app opening
// and closing a screen does. The host keeps nothing of a disposed
// feature: after 10,000 cycles the time a cycle takes, the C heap and the Lua heap are what
// they were after 100. Once on the virtual clock (the host driven by `settle`), once on the
// real clock (a queue host, each cycle waiting for the effect).
//
// The C heap is malloc's count of blocks in use (glibc's `mallinfo2`), which takes in two
// caches that fill over the first cycles and are not the host's: libdispatch keeps the
// continuations a thread frees (a Swift service's task is enqueued on one thread and freed on
// another), up to its limit per thread, about 115 KB by 1,000 cycles; and glibc's per-thread
// caches of freed blocks (tcache) are counted in use, and keep filling slowly, as do the
// arenas of the threads a real-clock host's work runs on. So the figures are also taken after
// 1,000 cycles, and the C heap once more from a child run with one arena and no thread caches
// (`GLIBC_TUNABLES=glibc.malloc.tcache_count=0:glibc.malloc.arena_max=1`): close to what the
// process keeps allocated, as heaptrack counts it (docs/performance.md, "A long-lived host").

/// Set in the child run that measures the C heap with one arena and no thread caches: the clock it runs.
private let childVariable = "MOONFLOW_BENCH_CYCLES_CHILD"

func cycleBench() {
    let total = BenchEnvironment.scaled(10_000)
    let marks = [100, 1_000, total].filter { $0 <= total }.reduce(into: [Int]()) {
        if !$0.contains($1) { $0.append($1) }
    }
    let child = BenchEnvironment.variables[childVariable]
    for clock in [FeatureHost.Clock.virtual, .real] where child == nil || child == clock.rawValue {
        guard let run = attempt("cycles (\(clock.rawValue) clock)", { try CycleRun(clock: clock, cycles: total) })
        else {
            continue
        }
        let figures: [CycleFigures]? = attempt("cycles") {
            var done = 0
            return try marks.map { mark in
                try run.cycles(mark - done)
                done = mark
                return run.figures(window: min(100, marks[0]))
            }
        }
        guard let figures else { continue }
        if child != nil {
            // What the parent reads: the C heap at each mark, in KB.
            print("c-heap " + figures.map { String(format: "%.1f", $0.heapKB) }.joined(separator: " "))
            continue
        }
        print(
            "load, three actions (a service each, a timer left running), dispose, on one host, \(clock.rawValue) clock")
        printComparison(marks: marks, figures, cachesOff: cHeapWithoutThreadCaches(clock: clock, marks: marks.count))
    }
}

/// The C heap at each mark from a child run of this suite on `clock` with one glibc arena and
/// no thread caches, nil where that cannot be run (no glibc, no figure).
private func cHeapWithoutThreadCaches(clock: FeatureHost.Clock, marks: Int) -> [Double]? {
    guard LuaState.cHeapInUse != nil else { return nil }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = ["cycles"]
    var environment = ProcessInfo.processInfo.environment
    environment["GLIBC_TUNABLES"] = "glibc.malloc.tcache_count=0:glibc.malloc.arena_max=1"
    environment[childVariable] = clock.rawValue
    process.environment = environment
    let pipe = Pipe()
    process.standardOutput = pipe
    guard (try? process.run()) != nil else { return nil }
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("c-heap ") }) else { return nil }
    let values = line.split(separator: " ").dropFirst().compactMap { Double($0) }
    return values.count == marks ? values : nil
}

private func printComparison(marks: [Int], _ figures: [CycleFigures], cachesOff: [Double]?) {
    func pad(_ text: String, _ width: Int) -> String {
        text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0)
    }
    let header = marks.map { pad("after \($0) cycles", 20) }.joined()
    print("  \(pad("", 44))  \(header)ratio (last / first)")
    func line(_ label: String, _ values: [Double], _ unit: String, decimals: Int = 1) {
        let cells = values.map { pad(String(format: "%.\(decimals)f", $0) + " " + unit, 20) }.joined()
        print("  \(pad(label, 44))  \(cells)\(ratio(values.last, values.first))")
    }
    line("time per cycle (median of the last \(figures[0].window))", figures.map(\.cycleMs), "ms", decimals: 3)
    line("C heap in use (malloc's)", figures.map(\.heapKB), "KB")
    if let cachesOff { line("C heap, one arena, no thread caches", cachesOff, "KB") }
    line("Lua heap after a full collection", figures.map(\.luaKB), "KB")
    line("Lua registry entries", figures.map { Double($0.registry) }, "", decimals: 0)
}

/// What a run measured at one point: the median cycle time of the last `window` cycles, the
/// heaps once the Lua state has been collected.
struct CycleFigures {
    let window: Int
    let cycleMs: Double
    let heapKB: Double
    let luaKB: Double
    let registry: Int
}

/// One host and the cycles run on it so far.
final class CycleRun {
    static let plugin = """
        local mf = require "moonflow"
        return mf.feature {
          name = "shop",
          initial = { lines = mf.array(), total = 0, status = "idle" },
          state = {
            lines = { "list", of = { sku = "string", qty = "integer", price = "integer" } },
            total = "integer",
            status = "string",
          },
          actions = { add = { sku = "string" }, checkout = {}, expire = {} },
          mutations = {
            added = { sku = "string", price = "integer" },
            paid = { total = "integer" },
          },
          outputs = { receipt = { total = "integer" } },
          strategy = { checkout = "latest" },
          services = { price = function(sku) return #sku end },
          handle = function(action, state, env)
            if action.type == "add" then
              return env.services.price(action.sku):map(function(p) return { type = "added", sku = action.sku, price = p } end)
            elseif action.type == "checkout" then
              return env.services.pay(state.total):map(function(t) return { type = "paid", total = t } end)
            elseif action.type == "expire" then
              return mf.timer(60000, { type = "paid", total = 0 })  -- the screen's timeout, still running at dispose
            end
          end,
          reduce = function(state, m)
            if m.type == "added" then
              state.lines[#state.lines + 1] = { sku = m.sku, qty = 1, price = m.price }
              state.total = state.total + m.price
            elseif m.type == "paid" then
              state.status = "paid"
              return state, { type = "receipt", total = m.total }
            end
          end,
        }
        """

    let host: FeatureHost
    let clock: FeatureHost.Clock
    private var times: [Double] = []

    /// - Parameter cycles: how many will run: their times' storage is made now, before any is measured.
    init(clock: FeatureHost.Clock, cycles: Int) throws {
        self.clock = clock
        times.reserveCapacity(cycles)
        host = try FeatureHost(configuration: .init(searchPaths: [], clock: clock))
        host.memory.set("shop/init.lua", CycleRun.plugin)
        host.register(service: "pay") { args in args.first ?? .nil }
    }

    /// Runs `count` more cycles, timing each.
    func cycles(_ count: Int) throws {
        for _ in 0..<count {
            let start = DispatchTime.now().uptimeNanoseconds
            try cycle()
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
        }
    }

    private func cycle() throws {
        let feature = try host.load("shop")
        let receipt = DispatchSemaphore(value: 0)
        let token = feature.observe { event in
            if case .effect = event { receipt.signal() }
        }
        feature.start()
        try feature.send(["type": "add", "sku": "apple"])
        try feature.send(["type": "checkout"])
        if clock == .virtual { host.runUntilIdle() }
        guard receipt.wait(timeout: .now() + 10) == .success else {
            throw BenchError("the feature sent no receipt within 10 s")
        }
        try feature.send(["type": "expire"])
        feature.dispose()
        token.cancel()
    }

    /// The figures now: the median of the last `window` cycles' times, and the heaps after a
    /// full collection of the host's Lua state.
    func figures(window: Int) -> CycleFigures {
        let last = times.suffix(window).sorted()
        let lua = host.lua
        let (luaBytes, registry) = host.perform { () -> (Int, Int) in
            lua.collectGarbage()
            return (lua.memoryInUse, lua.registryEntries)
        }
        return CycleFigures(
            window: last.count, cycleMs: last[last.count / 2], heapKB: Double(LuaState.cHeapInUse ?? 0) / 1024,
            luaKB: Double(luaBytes) / 1024, registry: registry)
    }
}
