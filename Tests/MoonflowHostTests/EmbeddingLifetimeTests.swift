import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import PluginFixtures
import XCTest

/// Embedding without surprises: lifetimes, stream ends, thread safety, typed
/// errors, enum actions and the SwiftUI view model.
final class EmbeddingLifetimeTests: XCTestCase {
    private var dir = ""

    override func setUpWithError() throws {
        dir = (NSTemporaryDirectory() as NSString).appendingPathComponent("mfembed\(UUID().uuidString.prefix(8))")
        try write(
            "cart/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "cart",
              initial = { items = {}, total = 0 },
              actions = { add = { sku = "string", quantity = "integer" }, clear = {}, check = { sku = "string" } },
              mutations = { added = { sku = "string", quantity = "integer" }, cleared = {} },
              interactors = { stock = require "cart.stock" },
              handle = function(action, state, env)
                if action.type == "add" then return { type = "added", sku = action.sku, quantity = action.quantity } end
                if action.type == "check" then
                  return env.interactors.stock:perform({ type = "level", sku = action.sku }):map(function() return { type = "cleared" } end)
                end
                return { type = "cleared" }
              end,
              reduce = function(state, m)
                if m.type == "added" then
                  state.items[#state.items + 1] = m.sku
                  state.total = state.total + m.quantity
                else
                  state.items, state.total = {}, 0
                end
                return state
              end,
            }
            """)
        try write(
            "cart/stock.lua",
            """
            local mf = require "moonflow"
            return mf.interactor {
              name = "stock",
              requests = { level = function(request) return mf.fail("no stock data for " .. request.sku) end },
            }
            """)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    private func write(_ path: String, _ text: String) throws {
        let full = (dir as NSString).appendingPathComponent(path)
        try FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: full, atomically: true, encoding: .utf8)
    }

    private func host() throws -> FeatureHost {
        try FeatureHost(configuration: .init(searchPaths: [dir], clock: .real))
    }

    func testDroppedStreamReadsLeaveNoListenerBehind() async throws {
        let host = try host()
        let cart = try await host.load("cart")
        cart.start()
        let baseline = cart.outlet.listenerCount
        for _ in 0..<10_000 {
            _ = cart.states
            _ = cart.effects
            _ = cart.stateChanges
        }
        XCTAssertLessThanOrEqual(
            cart.outlet.listenerCount, baseline + 1, "only the one cached stateChanges signal stays")
        // A consumer whose task is cancelled stops observing too.
        let before = cart.outlet.listenerCount
        let task = Task { for await _ in cart.states {} }
        try await Task.sleep(nanoseconds: 20_000_000)
        XCTAssertEqual(cart.outlet.listenerCount, before + 1)
        task.cancel()
        _ = await task.value
        XCTAssertEqual(cart.outlet.listenerCount, before)
    }

    func testStreamsEndWhenTheFeatureIsDisposedOrReleased() async throws {
        let host = try host()
        let cart = try await host.load("cart")
        cart.start()
        let states = cart.states
        let effects = cart.effects
        try cart.send(["type": "add", "sku": "A", "quantity": 2])
        try await cart.idle()
        cart.dispose()
        var seen: [LuaValue] = []
        for await state in states { seen.append(state) }  // ends: the feature is disposed
        XCTAssertEqual(seen.last?["total"], 2)
        for await _ in effects {}
        XCTAssertTrue(cart.isDisposed)

        var other: RunningFeature? = try await host.load("cart")
        let otherStates = other!.states
        other = nil
        var count = 0
        for await _ in otherStates { count += 1 }  // ends: the feature was released
        XCTAssertEqual(count, 1, "the current state, then the end")
    }

    func testReleasingTheHostFirstDoesNotCrashAFeatureWithAnInteractor() async throws {
        var host: FeatureHost? = try self.host()
        let cart = try await host!.load("cart")
        cart.start()
        let events = cart.events
        let logged = Logged()
        events.observe(value: { if case .log(let message, _) = $0 { logged.add(message) } })
        host = nil
        try cart.send(["type": "check", "sku": "A"])
        try await cart.idle()
        try await Task.sleep(nanoseconds: 20_000_000)
        XCTAssertTrue(logged.all.contains { $0.contains("no stock data for A") }, "\(logged.all)")
    }

    /// A live feature keeps its host alive: an app that releases the host first still gets
    /// its Swift services called and its logs delivered (before: every later call failed
    /// with "service 'price': the host is gone").
    func testAFeatureKeepsItsHostsServicesAfterTheHostIsReleased() async throws {
        try write(
            "priced/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "priced",
              initial = { price = 0 },
              actions = { ask = { sku = "string" } },
              mutations = { priced = { price = "integer" } },
              handle = function(action, state, env)
                return env.services.price(action.sku):map(function(p) return { type = "priced", price = p } end)
              end,
              reduce = function(state, m) state.price = m.price return state end,
            }
            """)
        var host: FeatureHost? = try self.host()
        host!.register(service: "price") { args in .integer(Int64(args.first?.stringValue?.count ?? 0) * 100) }
        weak let released = host
        let priced = try await host!.load("priced")
        host = nil
        XCTAssertNotNil(released, "the feature keeps the host")
        let errors = Logged()
        priced.events.observe(value: { if case .error(let message, _) = $0 { errors.add(message) } })
        try priced.send(["type": "ask", "sku": "tea"])
        try await priced.idle()
        XCTAssertEqual(errors.all, [])
        XCTAssertEqual(priced.state["price"], .integer(300))
    }

    func testRegisteringServicesWhileFeaturesLoadIsSafe() async throws {
        let host = try host()
        let done = DispatchGroup()
        for t in 0..<4 {
            done.enter()
            DispatchQueue.global().async {
                for i in 0..<200 { host.register(service: "s\(t)_\(i)") { _ in .nil } }
                done.leave()
            }
        }
        for _ in 0..<20 { _ = try await host.load("cart") }
        done.wait()
        let cart = try await host.load("cart")
        XCTAssertNotNil(cart)
    }

    enum CartAction: Encodable {
        case add(sku: String, quantity: Int)
        case clear
    }

    func testEnumCasesAndSwiftValuesBecomeActions() async throws {
        let host = try host()
        let cart = try await host.load("cart")
        cart.start()
        let sku = "B-2", quantity = 3
        try cart.send(case: CartAction.add(sku: sku, quantity: quantity))
        try cart.send(["type": "add", "sku": "\(sku)", "quantity": LuaValue(quantity)])
        try await cart.idle()
        XCTAssertEqual(cart.state, ["items": ["B-2", "B-2"], "total": 6])
        try cart.send(case: CartAction.clear)
        try await cart.idle()
        XCTAssertEqual(cart.state["total"], 0)
        XCTAssertThrowsError(try cart.send(case: Unknown.remove(id: 1))) { error in
            XCTAssertTrue("\(error)".contains("undeclared action 'remove'"), "\(error)")
        }
    }

    enum Unknown: Encodable { case remove(id: Int) }
}

private final class Logged: @unchecked Sendable {
    private let lock = NSLock()
    private var messages: [String] = []
    func add(_ m: String) { lock.withLock { messages.append(m) } }
    var all: [String] { lock.withLock { messages } }
}

// --- docs/embedding.md: A SwiftUI view model ---
struct CartView: Decodable, Sendable, Equatable { let items: [String]; let total: Int }

@MainActor
func makeCart(_ host: FeatureHost) async throws -> FeatureViewModel<CartView, LuaValue> {
    let cart = try await host.load("cart")
    cart.start()
    return try FeatureViewModel(cart, as: CartView.self, actions: LuaValue.self)
}
// --- end ---

/// The SwiftUI-ready view model of docs/embedding.md, on the main actor.
final class FeatureViewModelTests: XCTestCase {
    @MainActor
    func testTheViewModelFollowsTheStateOnTheMainActor() async throws {
        let dir = (NSTemporaryDirectory() as NSString).appendingPathComponent("mfvm\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: "\(dir)/cart", withIntermediateDirectories: true)
        try """
        local mf = require "moonflow"
        return mf.feature {
          name = "cart", initial = { items = mf.array and mf.array() or {}, total = 0 },
          actions = { add = { sku = "string", price = "integer" } }, mutations = { added = { sku = "string", price = "integer" } },
          handle = function(a) return { type = "added", sku = a.sku, price = a.price } end,
          reduce = function(s, m)
            if m.price < 0 then error("a price cannot be negative") end
            s.items[#s.items + 1] = m.sku; s.total = s.total + m.price; return s
          end,
        }
        """.write(toFile: "\(dir)/cart/init.lua", atomically: true, encoding: .utf8)

        let host = try FeatureHost(configuration: .init(searchPaths: [dir], clock: .real))
        let model = try await makeCart(host)
        XCTAssertEqual(model.view, CartView(items: [], total: 0))
        model.send(["type": "add", "sku": "tea", "price": 4])
        try await until { model.view.total == 4 }
        XCTAssertEqual(model.view, CartView(items: ["tea"], total: 4))
        model.send(["type": "add", "sku": "bad", "price": -1])
        try await until { model.lastError != nil }
        XCTAssertEqual(model.lastError?.stage, .reduce)
        XCTAssertEqual(model.lastError?.message, "a price cannot be negative")
        XCTAssertEqual(model.view.total, 4, "the state stayed as it was")
    }

    /// `dispose()` while a reduce runs on the host's queue: the reduce finishes, and its state
    /// reaches the view model before the feature's events end, so the view and `state` agree.
    /// Before, the events ended at once and the reduce's state was dropped: view 0, state 1.
    @MainActor
    func testAfterDisposeDuringAReduceTheViewAndTheStateAgree() async throws {
        struct SlowView: Decodable, Sendable, Equatable { let count: Int }
        let folder = try PluginFolder([
            "slow/init.lua": """
            local mf = require "moonflow"
            return mf.feature {
              name = "slow", initial = { count = 0 },
              actions = { bump = {} }, mutations = { bumped = {} },
              handle = function() return { type = "bumped" } end,
              reduce = function(s)
                local until_ = os.clock() + 0.2   -- 200 ms of CPU: dispose lands inside it
                while os.clock() < until_ do end
                s.count = s.count + 1
                return s
              end,
            }
            """
        ])
        let host = try FeatureHost(configuration: .init(searchPaths: [folder.dir], clock: .real))
        let slow = try await host.load("slow")
        let model = try FeatureViewModel(slow, as: SlowView.self, actions: LuaValue.self)
        slow.start()
        model.send(["type": "bump"])
        try await Task.sleep(nanoseconds: 20_000_000)
        slow.dispose()
        try await until { model.view.count == Int(slow.state["count"]?.intValue ?? -1) && slow.isIdle }
        try await Task.sleep(nanoseconds: 300_000_000)  // whatever was still to come has come
        XCTAssertEqual(
            model.view.count, Int(slow.state["count"]?.intValue ?? -1), "the view and the state agree after dispose")
        XCTAssertTrue(slow.isDisposed)
    }

    /// Waits on the main actor (letting the model's tasks run) until `condition` holds, for up to 5 s.
    @MainActor
    private func until(_ condition: @MainActor () -> Bool) async throws {
        let deadline = Date().addingTimeInterval(5)
        while !condition() {
            guard Date() < deadline else { throw CancellationError() }
            try await Task.sleep(nanoseconds: 1_000_000)
        }
    }
}
