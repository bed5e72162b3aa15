import Foundation
import LuaKit
import MoonflowLua
import PluginFixtures
import Streams
import MoonflowHost
import MoonflowHostTools
import XCTest

/// A feature the host composed with `mf.compose` takes JSON actions as its children do.
final class ComposedJSONActionTests: XCTestCase {
    /// A shop that routes every action to its one child, `orders`.
    static let plugins: [String: String] = [
        "orders/init.lua": """
        local mf = require "moonflow"
        return mf.feature {
          name = "orders", initial = { log = {} },
          actions = { add = { n = "integer" } }, mutations = { added = { n = "integer" } },
          handle = function(a) return { type = "added", n = a.n } end,
          reduce = function(s, m) s.log[#s.log + 1] = m.n; return s end,
        }
        """,
        "shop/init.lua": """
        local mf = require "moonflow"
        return mf.compose { name = "shop", children = { orders = "orders" },
          route = function(action) return "orders", action end,
          combine = function(states) return { log = states.orders.log } end }
        """,
    ]

    func testACompositionTakesJSON() throws {
        let h = try Harness(Self.plugins)
        let shop = try h.load("shop")
        try shop.send(json: #"{"type":"add","n":4}"#)
        h.settle()
        XCTAssertEqual(shop.state["log"], [4])
        XCTAssertThrowsError(try shop.send(json: #"{"type":"add","n":"four"}"#), "the child's schema refuses it")
        XCTAssertEqual(shop.state["log"], [4])
    }

    /// On a queue host, a composition sent to from a thread that an observer on the host's
    /// queue waits for: the send returns (its `route` is queued, not waited for), the action
    /// is reduced, and what the route refuses from there is an `.error` event. It used to wait
    /// for the queue: a deadlock.
    func testACompositionSentToFromAnotherThreadNeverWaitsForTheQueue() async throws {
        let folder = try PluginFolder(Self.plugins)
        let host = try FeatureHost(configuration: .init(searchPaths: [folder.dir], clock: .real))
        let shop = try await host.load("shop")
        let errors = Locked([String]())
        let sent = DispatchSemaphore(value: 0)
        let armed = Locked(false)
        let token = shop.observe(kinds: [.state, .error]) { event in
            if case .error(let message, _) = event { errors.withLock { $0.append(message) } }
            // The host's queue waits for the sender's send to return (bounded: a hang fails below).
            if armed.withLock({ $0 }) { _ = sent.wait(timeout: .now() + 10) }
        }
        defer { token.cancel() }
        shop.start()
        armed.withLock { $0 = true }
        try shop.send(["type": "add", "n": 1])  // its state event keeps the queue waiting for the sender
        let returned = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            try? shop.send(["type": "add", "n": 4])
            try? shop.send(["type": "add", "n": "four"])
            returned.signal()
            for _ in 0..<4 { sent.signal() }
        }
        XCTAssertEqual(
            returned.wait(timeout: .now() + 5), .success, "send returned while the queue waited for the sender")
        try await shop.idle()
        XCTAssertEqual(shop.state["log"], [1, 4])
        XCTAssertEqual(
            errors.withLock { $0.count }, 1, "the refused action is an error event: \(errors.withLock { $0 })")
        XCTAssertTrue(errors.withLock { $0.first ?? "" }.contains("n"), "\(errors.withLock { $0 })")
    }
}
