import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import PluginFixtures
import XCTest

/// A long-lived host's cost does not grow with its history: a screen opened and closed over
/// and over (load, a few actions, dispose) leaves nothing behind, so the Lua registry, the
/// Lua heap and the C heap after many cycles are what they were after a few. `scripts/bench
/// cycles` prints the same figures at 100 and 10,000 cycles, with the time a cycle takes
/// (docs/performance.md); a test asserts no time.
final class HostCyclesTests: XCTestCase {
    /// A feature with work in flight when it is disposed: a timer far off (a screen's
    /// timeout), an interval (a poll), and a Swift service's call.
    private static let plugin = """
        local mf = require "moonflow"
        return mf.feature {
          name = "screen",
          initial = { n = 0, lines = mf.array() },
          state = { n = "integer", lines = { "list", of = { sku = "string", qty = "integer" } } },
          actions = { add = { sku = "string" }, wait = {}, poll = {}, ask = {} },
          mutations = { added = { sku = "string" }, tick = {} },
          handle = function(action, state, env)
            if action.type == "add" then return { type = "added", sku = action.sku }
            elseif action.type == "wait" then return mf.timer(60000, { type = "tick" })
            elseif action.type == "poll" then return mf.interval(60000):map(function() return { type = "tick" } end)
            else return env.services.price(action.type):map(function() return { type = "tick" } end) end
          end,
          reduce = function(state, m)
            if m.type == "added" then state.lines[#state.lines + 1] = { sku = m.sku, qty = 1 } end
            state.n = state.n + 1
          end,
        }
        """

    /// What the host holds now, after a full collection on its state executor.
    private struct Held: CustomStringConvertible {
        let registry: Int
        let luaHeap: Int
        let cHeap: Int
        var description: String { "\(registry) registry entries, Lua heap \(luaHeap) B, C heap \(cHeap) B" }
    }

    private func held(_ host: FeatureHost) throws -> Held {
        let lua = host.lua
        let (registry, luaHeap) = host.perform { () -> (Int, Int) in
            lua.collectGarbage()
            return (lua.registryEntries, lua.memoryInUse)
        }
        return Held(registry: registry, luaHeap: luaHeap, cHeap: try MemoryInUse.heapBytes())
    }

    /// Opens and closes the screen `count` times: load, observe, three actions (the timer, the
    /// interval and the service still running), dispose.
    private func cycles(_ count: Int, on host: FeatureHost) throws {
        for i in 0..<count {
            let feature = try host.load("screen")
            let token = feature.observe(kinds: .state) { _ in }
            feature.start()
            try feature.send(["type": "add", "sku": .string(LuaString("sku\(i % 7)"))])
            try feature.send(["type": "wait"])
            try feature.send(["type": "poll"])
            try feature.send(["type": "ask"])
            host.perform {}  // handled: the flights are running
            feature.dispose()
            token.cancel()
        }
        host.perform {}  // what dispose scheduled on the executor has run
    }

    /// On the real clock a disposed feature's timers let go of it when it is disposed, not
    /// when they would have fired: before, each cycle's feature (its streams, and through them
    /// its state and `env`) and two dispatch timers stayed for the timers' 60 s, so 500 cycles
    /// added 500 registry entries, 139 KB of Lua heap and 2.2 MB of C heap.
    func testAHostOnTheRealClockKeepsNothingOfADisposedFeature() throws {
        let host = try FeatureHost(configuration: .init(searchPaths: []))
        host.memory.set("screen/init.lua", Self.plugin)
        host.register(service: "price") { _ in .nil }
        try cycles(50, on: host)
        let warm = try held(host)
        try cycles(500, on: host)
        let after = try held(host)
        XCTAssertLessThanOrEqual(
            after.registry, warm.registry + 2, "500 cycles more: from \(warm) to \(after)")
        XCTAssertLessThan(after.luaHeap - warm.luaHeap, 32 << 10, "500 cycles more: from \(warm) to \(after)")
        // Swift's task machinery keeps some of its own per service call on the real clock
        // (up to ~500 B, libdispatch's continuations): the bound is well under the 2.2 MB before.
        XCTAssertLessThan(after.cHeap - warm.cHeap, 1 << 20, "500 cycles more: from \(warm) to \(after)")
    }

    /// On the virtual clock too, driven as a test drives it; a cycle here runs its work out.
    func testAHostOnTheVirtualClockKeepsNothingOfADisposedFeature() throws {
        let host = try FeatureHost(configuration: .init(searchPaths: [], clock: .virtual))
        host.memory.set("screen/init.lua", Self.plugin)
        host.register(service: "price") { _ in .nil }
        try cycles(50, on: host)
        let warm = try held(host)
        try cycles(500, on: host)
        let after = try held(host)
        XCTAssertLessThanOrEqual(after.registry, warm.registry + 2, "500 cycles more: from \(warm) to \(after)")
        XCTAssertLessThan(after.luaHeap - warm.luaHeap, 32 << 10, "500 cycles more: from \(warm) to \(after)")
        XCTAssertLessThan(after.cHeap - warm.cHeap, 256 << 10, "500 cycles more: from \(warm) to \(after)")
    }
}
