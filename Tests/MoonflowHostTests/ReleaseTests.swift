import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import MoonflowRepositories
import Runtime
import XCTest

/// What an embedding app drops is freed: a host and its features, released, take their
/// Lua state with them. Swift objects the Lua state holds (stream userdata, Swift
/// functions, interactors, tasks, repositories) must not own the bridge, the state or
/// the host, or state and objects keep each other alive for good: an app would leak
/// a whole Lua state with every screen it opens and closes.
///
/// Each case holds what it makes in Lua itself (an upvalue of `handle`), so no garbage
/// collection can break a cycle by chance: the only way out is that there is none.
final class ReleaseTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        dir = (NSTemporaryDirectory() as NSString).appendingPathComponent("mfrelease\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    /// A plugin whose `go` handler merges `streams` (Lua expressions, each a stream kept
    /// by the plugin) and counts their values in `state.n`.
    private func write(_ name: String, streams: [String], extra: String = "") throws {
        let folder = (dir as NSString).appendingPathComponent(name)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try """
        local mf = require "moonflow"
        local kept = {}
        return mf.feature {
          name = "\(name)",
          initial = { n = 0 },
          actions = { go = {} },
          mutations = { seen = {} },
          \(extra)
          handle = function(action, state, env)
            if #kept == 0 then kept = { \(streams.joined(separator: ", ")) } end
            return mf.merge(table.unpack(kept)):map(function() return { type = "seen" } end)
          end,
          reduce = function(state) state.n = state.n + 1; return state end,
        }
        """.write(toFile: (folder as NSString).appendingPathComponent("init.lua"), atomically: true, encoding: .utf8)
    }

    private struct Released {
        weak var host: FeatureHost?
        weak var bridge: LuaBridge?
        weak var lua: LuaState?
        weak var feature: (any RunningFeature)?
    }

    /// Loads `name` on a host of its own, sends `go`, checks the count, then drops both.
    private func loadAndRelease(
        _ name: String, expecting n: Int, configure: (FeatureHost) -> Void = { _ in },
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> Released {
        var released = Released()
        do {
            let host = try FeatureHost(configuration: .init(searchPaths: [dir], clock: .virtual))
            configure(host)
            let feature = try host.load(name)
            feature.start()
            try feature.send(["type": "go"])
            host.advance(by: 100)
            XCTAssertEqual(feature.state["n"], .integer(Int64(n)), file: file, line: line)
            released = Released(host: host, bridge: host.bridge, lua: host.lua, feature: feature)
        }
        return released
    }

    private func assertFreed(_ r: Released, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertNil(r.feature, "the feature", file: file, line: line)
        XCTAssertNil(r.host, "the host", file: file, line: line)
        XCTAssertNil(r.bridge, "the bridge", file: file, line: line)
        XCTAssertNil(r.lua, "the Lua state", file: file, line: line)
    }

    func testWorkLeftOnTheVirtualClockDoesNotKeepTheHostAlive() throws {
        try write("pending", streams: ["mf.timer(1000, 1)"])
        weak var clock: AnyObject?
        var released = Released()
        do {
            let host = try FeatureHost(configuration: .init(searchPaths: [dir], clock: .virtual))
            let feature = try host.load("pending")
            feature.start()
            try feature.send(["type": "go"])
            host.advance(by: 10)  // the timer is armed, not due
            try feature.send(["type": "go"])  // queued: its handling waits for the clock to run
            clock = host.testScheduler
            released = Released(host: host, bridge: host.bridge, lua: host.lua, feature: feature)
        }
        assertFreed(released)
        XCTAssertNil(clock, "the virtual clock")
    }

    func testStreamsMadeByOperatorsThatCallLuaDoNotKeepTheStateAlive() throws {
        try write(
            "operators",
            streams: [
                "mf.just(1):map(function(x) return x end)",
                "mf.just(1):filter(function() return true end)",
                "mf.just(1):flatMap(function(x) return mf.just(x) end)",
                "mf.just(1):flatMapLatest(function(x) return mf.just(x) end)",
                "mf.just(1):concatMap(function(x) return mf.just(x) end)",
                "mf.fail('no'):catchError(function() return mf.just(1) end)",
                "mf.just(1):scan(0, function(a, x) return a + x end)",
                "mf.just(1):withLatestFrom(mf.just(2), function(x, y) return x + y end)",
                "mf.just(1):delay(10)",
                "mf.timer(5, 1)",
            ])
        assertFreed(try loadAndRelease("operators", expecting: 10))
    }

    func testTasksDoNotKeepTheStateAlive() throws {
        try write(
            "tasks",
            streams: [
                "mf.task(function(t) t:emit(1) end)",
                "mf.task(function(t) local ok, v = t:await(mf.timer(5, 1)); t:emit(v) end)",
                // Still waiting when the feature goes: its coroutine is closed then.
                "mf.task(function(t) t:await(mf.never()) end)",
            ])
        assertFreed(try loadAndRelease("tasks", expecting: 2))
    }

    func testInteractorsDoNotKeepTheStateAlive() throws {
        try write(
            "asks", streams: ["env.interactors.echo:perform { type = 'say', n = 1 }"],
            extra: """
                interactors = { echo = mf.interactor { name = "echo", requests = { say = function(r) return mf.just(r.n) end } } },
                """)
        assertFreed(try loadAndRelease("asks", expecting: 1))
    }

    func testServicesDoNotKeepTheStateAlive() throws {
        try write("calls", streams: ["env.services.twice(2)", "env.services.twice(3):map(function(x) return x end)"])
        let r = try loadAndRelease("calls", expecting: 2) { host in
            host.register(service: "twice") { args in .integer((args.first?.intValue ?? 0) * 2) }
        }
        assertFreed(r)
    }

    func testRegisteredRepositoriesDoNotKeepTheStateAlive() throws {
        try write("users", streams: ["env.services.users:getAll()"])
        let r = try loadAndRelease("users", expecting: 1) { host in
            host.register(repository: InMemoryRepository<Record>([Record(id: "1", fields: [:])]), named: "users")
        }
        assertFreed(r)
    }

    func testDeclaredRepositoriesDoNotKeepTheStateAlive() throws {
        try write(
            "declared", streams: ["env.services.people:get { id = 1 }"],
            extra: """
                repositories = { people = { seed = { { id = 1, name = "Ada" } } } },
                """)
        assertFreed(try loadAndRelease("declared", expecting: 1))
    }
}
