import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import MoonflowTesting
import XCTest

/// Cancellation by id: `env.cancellable(id, stream)` marks work, `env.cancel(id)` returned by any
/// handler of the same feature stops it, and what it would still have sent never arrives.
final class CancellableIDTests: XCTestCase {
    private var dir = ""

    /// A paged feed: `more` loads the next page in 100 ms, `refresh` the first page in 30 ms
    /// and cancels a `more` still on its way; `tick` starts a cancellable 50-ms interval.
    private static let feed = """
        local mf = require "moonflow"
        return mf.feature {
          name = "feed",
          initial = { items = mf.array(), page = 0, ticks = 0 },
          actions = { more = {}, refresh = {}, tick = {}, stop = {}, bad = {} },
          mutations = { appended = { page = "integer" }, replaced = {}, ticked = {} },
          handle = function(action, state, env)
            if action.type == "more" then
              return env.cancellable("more", mf.timer(100, { type = "appended", page = state.page + 1 }))
            elseif action.type == "refresh" then
              return mf.merge(env.cancel("more"), mf.timer(30, { type = "replaced" }))
            elseif action.type == "tick" then
              return env.cancellable("ticks", mf.interval(50):map(function() return { type = "ticked" } end))
            elseif action.type == "stop" then
              return env.cancel("ticks", "more")
            else
              return env.cancellable(42, mf.empty())
            end
          end,
          reduce = function(state, m)
            if m.type == "appended" then
              state.page = m.page
              state.items[#state.items + 1] = "page " .. m.page
            elseif m.type == "replaced" then
              state.page, state.items = 1, { "page 1" }
            else
              state.ticks = state.ticks + 1
            end
            return state
          end,
        }
        """

    override func setUpWithError() throws {
        dir = (NSTemporaryDirectory() as NSString).appendingPathComponent("mfcancel\(UUID().uuidString.prefix(8))")
        try write("feed/init.lua", Self.feed)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    private func write(_ path: String, _ text: String) throws {
        let full = (dir as NSString).appendingPathComponent(path)
        try FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: full, atomically: true, encoding: .utf8)
    }

    private func failure(_ body: () throws -> Void) -> String {
        do { try body() } catch let f as FeatureStore.Failure { return f.message } catch {
            return "unexpected \(error)"
        }
        return "no failure"
    }

    func testRefreshCancelsAStaleMoreWhosePageNeverArrives() throws {
        let s = try FeatureStore("feed", searchPaths: [dir])
        try s.send(["type": "more"])
        s.advance(by: 50)
        try s.send(["type": "refresh"])
        s.advance(by: 30)
        try s.receive(["type": "replaced"]) {
            $0["page"] = 1
            $0["items"] = ["page 1"]
        }
        // The `more` timer was due at 100 ms: cancelled, its page never comes.
        s.advance(by: 200)
        try s.finish()
        XCTAssertEqual(s.state["page"], 1)
    }

    func testASwiftServicesAnswerInFlightNeverArrives() throws {
        try write(
            "pages/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "pages",
              initial = { page = 0 },
              actions = { more = {}, refresh = {} },
              mutations = { loaded = { page = "integer" } },
              handle = function(action, state, env)
                if action.type == "more" then
                  return env.cancellable("more", env.services.page(state.page + 1)
                    :map(function(n) return { type = "loaded", page = n } end))
                end
                return mf.concat(env.cancel("more"), env.services.page(1)
                  :map(function(n) return { type = "loaded", page = n } end))
              end,
              reduce = function(state, m) state.page = m.page; return state end,
            }
            """)
        let gate = Gate()
        let s = try FeatureStore(
            "pages", searchPaths: [dir],
            services: [
                .stub("page") { (n: Int) async throws -> Int in
                    if n == 2 { await gate.wait() }
                    return n
                }
            ])
        try s.send(["type": "more"])
        try s.receive(["type": "loaded", "page": 1]) { $0["page"] = 1 }
        try s.send(["type": "more"])  // page 2's answer waits in the service
        try s.send(["type": "refresh"])
        gate.open()
        try s.receive(["type": "loaded", "page": 1])
        try s.finish()
        XCTAssertEqual(s.state["page"], 1, "page 2 was answered after the refresh cancelled it")
    }

    func testOneHandlerCancelsSeveralIdsAcrossActionTypes() throws {
        let s = try FeatureStore("feed", searchPaths: [dir])
        try s.send(["type": "tick"])
        try s.send(["type": "more"])
        s.advance(by: 50)
        try s.receive(["type": "ticked"]) { $0["ticks"] = 1 }
        try s.send(["type": "stop"])
        s.advance(by: 500)
        try s.finish()
    }

    func testFinishNamesTheIdsStillLive() throws {
        let s = try FeatureStore("feed", searchPaths: [dir])
        try s.send(["type": "tick"])
        try s.send(["type": "more"])
        let message = failure { try s.finish() }
        XCTAssertTrue(message.contains("2 streams were still in flight"), message)
        XCTAssertTrue(message.contains("Cancellable ids still live: more, ticks"), message)
    }

    func testAnIdThatIsNoStringIsAnErrorNamingTheLine() throws {
        let s = try FeatureStore("feed", searchPaths: [dir])
        try s.send(["type": "bad"])
        let message = failure { try s.receiveError("env.cancellable: argument 1 must be a non-empty string") }
        XCTAssertEqual(message, "no failure")
        try s.finish()
    }

    func testAChildCancelsItsOwnStreamAndFinishNamesTheChild() throws {
        try write(
            "pair/init.lua",
            """
            local mf = require "moonflow"
            return mf.compose {
              name = "pair",
              children = { left = "feed", right = "feed" },
              route = function(action) return action.to, { type = action.type } end,
              combine = function(states) return { left = states.left.page, right = states.right.page } end,
            }
            """)
        let s = try FeatureStore("pair", searchPaths: [dir])
        try s.send(["type": "more", "to": "left"])
        try s.send(["type": "more", "to": "right"])
        // The right child's refresh cancels the right child's `more` only: ids are per feature.
        try s.send(["type": "refresh", "to": "right"])
        s.advance(by: 30)
        try s.receive(["type": "replaced"]) { $0["right"] = 1 }
        let message = failure { try s.finish() }
        XCTAssertTrue(message.contains("1 stream was still in flight"), message)
        XCTAssertTrue(message.contains("Cancellable ids still live: left: more"), message)
    }
}

/// Holds a service's answer until the test opens it.
private final class Gate: @unchecked Sendable {
    private let lock = NSLock()
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        await withCheckedContinuation { continuation in
            lock.lock()
            if isOpen {
                lock.unlock()
                continuation.resume()
            } else {
                waiters.append(continuation)
                lock.unlock()
            }
        }
    }

    func open() {
        lock.lock()
        isOpen = true
        let waiting = waiters
        waiters = []
        lock.unlock()
        waiting.forEach { $0.resume() }
    }
}
