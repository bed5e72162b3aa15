import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import MoonflowTesting
import XCTest

/// Test stores, dropped, free their hosts and Lua states: a Swift `FeatureStore`, and one a
/// spec made with `T.store` (a userdata of the spec's Lua state, which must not keep that
/// state alive through the store's feature and host).
final class StoreReleaseTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        dir = (NSTemporaryDirectory() as NSString).appendingPathComponent(
            "mfstorerelease\(UUID().uuidString.prefix(8))")
        let folder = (dir as NSString).appendingPathComponent("ticker")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try """
        local mf = require "moonflow"
        return mf.feature {
          name = "ticker",
          initial = { n = 0 },
          actions = { go = {} },
          mutations = { tick = {} },
          handle = function() return mf.timer(10, { type = "tick" }):map(function(m) return m end) end,
          reduce = function(state) state.n = state.n + 1; return state end,
        }
        """.write(toFile: (folder as NSString).appendingPathComponent("init.lua"), atomically: true, encoding: .utf8)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func testASwiftStoreFreesItsHostAndLuaState() throws {
        weak var host: FeatureHost?
        weak var lua: LuaState?
        do {
            let store = try FeatureStore("ticker", searchPaths: [dir])
            try store.send(["type": "go"])
            store.advance(by: 10)
            try store.receive(["type": "tick"]) { $0["n"] = 1 }
            try store.finish()
            host = store.host
            lua = store.host.lua
        }
        XCTAssertNil(host)
        XCTAssertNil(lua)
    }

    func testAStoreASpecKeepsDoesNotKeepTheSpecsLuaStateAlive() throws {
        weak var host: FeatureHost?
        weak var lua: LuaState?
        weak var bridge: LuaBridge?
        do {
            let specHost = try FeatureHost(
                configuration: .init(searchPaths: [dir], clock: .virtual), switchableClock: true)
            try TestModule.install(in: specHost)
            // A global: the state itself keeps the store (and its feature) for as long as it lives.
            let chunk = try specHost.lua.load(
                string: """
                    local T = require "moonflow.test"
                    kept = T.store("ticker")
                    kept:send({ type = "go" })
                    kept:advance(10)
                    kept:receive({ type = "tick" }, function(s) s.n = 1 end)
                    kept:finish()
                    return kept.state.n
                    """, name: "=spec")
            let n = try specHost.lua.call(chunk, []) { try $0.value(1) }
            XCTAssertEqual(n, 1)
            host = specHost
            lua = specHost.lua
            bridge = specHost.bridge
        }
        XCTAssertNil(host, "the spec's host")
        XCTAssertNil(bridge, "the spec's bridge")
        XCTAssertNil(lua, "the spec's Lua state")
    }
}
