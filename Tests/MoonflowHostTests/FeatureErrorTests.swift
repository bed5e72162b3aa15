import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import PluginFixtures
import Streams
import XCTest

/// One error type: whatever `send` refuses is a `FeatureError` of stage `.send` (with the
/// error behind it in `underlying`), a disposed feature refuses actions, and services are
/// found when called, so one registered after `load` is there, and a missing one is named.
final class FeatureErrorTests: XCTestCase {
    static let shop = """
        local mf = require "moonflow"
        return mf.feature {
          name = "shop",
          initial = { paid = "", note = "" },
          actions = { pay = { amount = "integer" }, note = { text = "string" } },
          mutations = { paid = { receipt = "string" }, note = { text = "string" } },
          handle = function(a, state, env)
            if a.type == "note" then return { type = "note", text = a.text } end
            return env.services.payments(a.amount):map(function(r) return { type = "paid", receipt = r } end)
          end,
          reduce = function(s, m)
            if m.type == "paid" then s.paid = m.receipt else s.note = m.text end
            return s
          end,
        }
        """

    /// `pay` takes an integer amount in the plugin: a string one is refused.
    enum Action: Encodable, Sendable { case note(text: String); case pay(amount: String) }

    private func loaded() throws -> (FeatureHost, RunningFeature, PluginFolder) {
        let folder = try PluginFolder(["shop/init.lua": Self.shop])
        let host = try FeatureHost(configuration: .init(searchPaths: [folder.dir], clock: .virtual))
        let shop = try host.load("shop")
        shop.start()
        return (host, shop, folder)
    }

    private func refusal(_ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line) -> FeatureError?
    {
        do { try body() } catch let error as FeatureError { return error } catch {
            XCTFail("threw \(type(of: error)), not FeatureError: \(error)", file: file, line: line)
            return nil
        }
        XCTFail("nothing was thrown", file: file, line: line)
        return nil
    }

    func testEveryRefusedActionIsAFeatureErrorOfStageSend() throws {
        let (_, shop, _) = try loaded()
        let undeclared = refusal { try shop.send(["type": "refund"]) }
        XCTAssertEqual(undeclared?.stage, .send)
        XCTAssertEqual(undeclared?.action, ["type": "refund"])
        XCTAssertTrue(undeclared?.underlying is SchemaError)
        XCTAssertTrue(undeclared?.message.contains("refund") == true, undeclared?.message ?? "")

        let wrongField = refusal { try shop.send(["type": "pay", "amount": "ten"]) }
        XCTAssertEqual(wrongField?.stage, .send)
        XCTAssertEqual(wrongField?.message, "action 'pay': field 'amount' must be an integer (got string \"ten\")")

        let malformed = refusal { try shop.send(json: #"{"type":"pay","#) }
        XCTAssertEqual(malformed?.stage, .send)
        XCTAssertTrue(malformed?.underlying is JSONError)

        XCTAssertEqual(shop.state, ["paid": "", "note": ""], "nothing was queued")
    }

    func testSendAfterDisposeThrows() throws {
        let (_, shop, _) = try loaded()
        shop.dispose()
        let error = refusal { try shop.send(["type": "note", "text": "late"]) }
        XCTAssertEqual(error?.stage, .send)
        XCTAssertEqual(error?.message, "feature 'shop' was disposed; it takes no more actions (load it again)")
    }

    func testAViewFieldThatSendsARefusedActionSetsLastError() throws {
        try MainActor.assumeIsolated {
            // Fields are a main-actor host's: there a write reads back at once.
            let host = try MainActorHost()
            let shop = try host.load(name: "shop", source: Self.shop)
            shop.start()
            struct ShopView: Decodable, Sendable { let note: String }
            let model = try shop.model(as: ShopView.self, actions: Action.self)
            let note = model.field(\.note) { .note(text: $0) }
            note.wrappedValue = "gift wrap"
            XCTAssertEqual(note.wrappedValue, "gift wrap")
            XCTAssertNil(model.lastError)
            let amount = model.field(\.note) { .pay(amount: $0) }
            amount.wrappedValue = "ten"
            XCTAssertEqual(model.lastError?.stage, .send)
        }
    }

    func testAServiceRegisteredAfterLoadIsFoundAndAMissingOneIsNamed() throws {
        let (host, shop, _) = try loaded()
        let errors = Locked<[FeatureError]>([])
        let token = shop.observe(kinds: .error) { [weak shop] _ in
            if let error = shop?.eventError { errors.withLock { $0.append(error) } }
        }
        defer { token.cancel() }
        host.register(service: "audit") { _ in .nil }
        try shop.send(["type": "pay", "amount": 10])
        host.settle()
        let error = try XCTUnwrap(errors.withLock { $0.first })
        XCTAssertEqual(error.stage, .handle)
        XCTAssertTrue(
            error.message.contains(
                "service 'payments' is not registered with the host (registered: audit); register it with host.register(service: \"payments\")"
            ), error.message)

        host.register(service: "payments") { args in .string(LuaString("receipt for \(args.first?.intValue ?? 0)")) }
        try shop.send(["type": "pay", "amount": 10])
        host.settle()
        XCTAssertEqual(shop.state["paid"], "receipt for 10", "registered after load, found when called")
    }

    func testWhatAFeatureReportsNamesItsFilesFromThePluginFolder() throws {
        // An app's plugins sit at an absolute path (its bundle's): messages name the plugin's
        // files from that folder.
        let folder = try PluginFolder([
            "loud/init.lua": """
            local mf = require "moonflow"
            return mf.feature {
              name = "loud", initial = { n = 0 }, actions = { go = {} }, mutations = {},
              handle = function() error("no way") end, reduce = function(s) return s end,
            }
            """,
            "broken/init.lua": "return mf.feature {",
        ])
        XCTAssertTrue(folder.dir.hasPrefix("/"))
        let host = try FeatureHost(configuration: .init(searchPaths: [folder.dir], clock: .virtual))
        let loud = try host.load("loud")
        let errors = Locked<[FeatureError]>([])
        let token = loud.observe(kinds: .error) { [weak loud] _ in
            if let e = loud?.eventError { errors.withLock { $0.append(e) } }
        }
        defer { token.cancel() }
        loud.start()
        try loud.send(["type": "go"])
        host.settle()
        let reported = try XCTUnwrap(errors.withLock { $0.first })
        XCTAssertEqual(reported.location, "loud/init.lua:4")
        XCTAssertFalse((reported.traceback ?? "").contains(folder.dir), reported.traceback ?? "")
        XCTAssertThrowsError(try host.load("broken")) { error in
            XCTAssertEqual((error as? FeatureError)?.location, "broken/init.lua:1", "\(error)")
            XCTAssertFalse("\(error)".contains(folder.dir), "\(error)")
        }
    }

    /// A started feature whose `block` action blocks in C (`os.execute` of a sleep) for
    /// `seconds`, past any time limit; `bump` adds one to `n`.
    private func loadStuck(in host: FeatureHost, sleeping seconds: Int) throws -> RunningFeature {
        let feature = try host.load(
            name: "stuck",
            source: """
                local mf = require "moonflow"
                return mf.feature {
                  name = "stuck", initial = { n = 0 }, actions = { block = {}, bump = {} }, mutations = { bump = {} },
                  handle = function(a)
                    if a.type == "block" then os.execute("exec sleep \(seconds) </dev/null >/dev/null 2>&1") end
                    return { type = "bump" }
                  end,
                  reduce = function(s) s.n = s.n + 1 return s end,
                }
                """)
        feature.start()
        return feature
    }

    /// The watchdog's last resort: a call blocked in C past its wall-clock backstop (and two
    /// seconds) poisons the host, and every later action is refused with an error that says what to do.
    func testAHostStuckInABlockingCallIsPoisonedAndRefusesActionsSayingWhy() throws {
        let host = try FeatureHost(configuration: .init(timeLimitMs: 100))
        let feature = try loadStuck(in: host, sleeping: 8)
        try feature.send(["type": "block"])
        XCTAssertFalse(host.isStuck, "not at once: only once the call outlives its limit and the grace")
        let deadline = Date().addingTimeInterval(7.5)
        while !host.isStuck, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertTrue(host.isStuck)
        XCTAssertThrowsError(try feature.send(["type": "bump"])) { error in
            let e = error as? FeatureError
            XCTAssertEqual(e?.stage, .send)
            XCTAssertTrue(
                e?.message.contains("feature 'stuck' takes no more actions: its Lua state is stuck") == true, "\(error)"
            )
            XCTAssertTrue(e?.message.contains("load the plugin again in a new host") == true, "\(error)")
        }
        XCTAssertThrowsError(try feature.send(json: #"{"type":"bump"}"#)) { error in
            XCTAssertTrue("\(error)".contains("is stuck"), "\(error)")
        }
    }

    /// A state stuck in a blocking call is not touched when read from another thread: the
    /// read returns the snapshot taken last, where going into Lua would race the stuck thread.
    /// That snapshot has every reduce that finished: the writes that waited in Lua (no one
    /// listens for states) were taken into it before Lua called out into os.execute. (It
    /// was `n = 0`: the bump's write was lost with the stuck state, and a rebuild from it.)
    func testAStuckStatesLastSnapshotHasEveryReduceThatFinished() throws {
        let host = try FeatureHost(configuration: .init(timeLimitMs: 100, clock: .virtual))
        let feature = try loadStuck(in: host, sleeping: 8)
        guard let clock = host.testScheduler else { return XCTFail("not on the virtual clock") }
        try feature.send(["type": "bump"])
        try feature.send(["type": "block"])
        let driver = Thread { clock.advance(by: 0) }  // the drain blocks in `block`'s handle
        driver.start()
        let deadline = Date().addingTimeInterval(7.5)
        while !host.isStuck, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertTrue(host.isStuck)
        XCTAssertEqual(
            feature.state, ["n": 1], "the snapshot taken last holds the bump that finished before the stuck call")
    }

    /// On a virtual clock the state has no executor of its own: while another thread drives
    /// it, with writes waiting in Lua, a read leaves Lua alone and returns the snapshot taken
    /// last (a consistent, earlier state); once the drain ends the snapshot has everything.
    func testReadingWhileAnotherThreadDrivesAVirtualClockLeavesLuaToThatThread() throws {
        let host = try FeatureHost(configuration: .init(clock: .virtual))
        let feature = try host.load(
            name: "busy",
            source: """
                local mf = require "moonflow"
                return mf.feature {
                  name = "busy", initial = { n = 0 }, actions = { bump = {}, slow = {} }, mutations = { bump = {} },
                  handle = function(a)
                    if a.type == "slow" then local x = 0 for i = 1, 4e7 do x = x + i end end
                    return { type = "bump" }
                  end,
                  reduce = function(s) s.n = s.n + 1 return s end,
                }
                """)
        feature.start()
        guard let clock = host.testScheduler else { return XCTFail("not on the virtual clock") }
        try feature.send(["type": "bump"])
        try feature.send(["type": "slow"])
        let done = DispatchSemaphore(value: 0)
        let driver = Thread {
            clock.advance(by: 0); done.signal()
        }
        driver.start()
        var seen: Set<LuaValue> = []
        while done.wait(timeout: .now()) == .timedOut { seen.insert(feature.state["n"] ?? .nil) }
        XCTAssertTrue(seen.isSubset(of: [0, 2]), "\(seen)")
        XCTAssertEqual(feature.state, ["n": 2])
    }
}
