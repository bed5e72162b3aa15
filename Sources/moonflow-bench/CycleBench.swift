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

func cycleBench() {
    let total = BenchEnvironment.scaled(10_000)
    let early = min(100, total)
    for clock in [FeatureHost.Clock.virtual, .real] {
        guard let run = attempt("cycles (\(clock.rawValue) clock)", { try CycleRun(clock: clock, cycles: total) })
        else {
            continue
        }
        let result: (early: CycleFigures, late: CycleFigures)? = attempt("cycles") {
            try run.cycles(early)
            let first = run.figures(window: early)
            try run.cycles(total - early)
            return (first, run.figures(window: early))
        }
        guard let result else { continue }
        print(
            "load, three actions (a service each, a timer left running), dispose, on one host, \(clock.rawValue) clock")
        printComparison(early: early, total: total, result.early, result.late)
    }
}

private func printComparison(early: Int, total: Int, _ a: CycleFigures, _ b: CycleFigures) {
    func pad(_ text: String, _ width: Int) -> String {
        text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0)
    }
    print("  \(pad("", 40))  \(pad("after \(early) cycles", 20))\(pad("after \(total) cycles", 20))ratio")
    func line(_ label: String, _ x: Double, _ y: Double, _ unit: String, decimals: Int = 1) {
        let fx = String(format: "%.\(decimals)f", x) + " " + unit, fy = String(format: "%.\(decimals)f", y) + " " + unit
        print("  \(pad(label, 40))  \(pad(fx, 20))\(pad(fy, 20))\(ratio(y, x))")
    }
    line("time per cycle (median of the last \(a.window))", a.cycleMs, b.cycleMs, "ms", decimals: 3)
    line("C heap in use (malloc's)", a.heapKB, b.heapKB, "KB")
    line("Lua heap after a full collection", a.luaKB, b.luaKB, "KB")
    line("Lua registry entries", Double(a.registry), Double(b.registry), "", decimals: 0)
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
