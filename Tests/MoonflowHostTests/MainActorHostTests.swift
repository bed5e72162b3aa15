import Foundation
import Observation
import LuaKit
import MoonflowHost
import PluginFixtures
import Streams
import XCTest

/// A host whose executor is `.mainActor`, driven from the main thread as a SwiftUI app drives
/// it: `send` has run `handle` and `reduce` when it returns, actions sent by observers run
/// before the outer `send` returns, timers fire on the main thread in real time, and services
/// run off it and re-enter on it. (XCTest runs these tests on the main thread.)
final class MainActorHostTests: XCTestCase {
    static let field = """
        local mf = require "moonflow"
        return mf.feature {
          name = "field",
          initial = { text = "", log = {}, ticks = 0, fetched = "" },
          actions = { setText = { text = "string" }, later = { ms = "integer" }, fetch = {} },
          mutations = { text = { text = "string" }, tick = {}, fetched = { value = "string" } },
          handle = function(a, state, env)
            if a.type == "setText" then return { type = "text", text = a.text } end
            if a.type == "later" then return mf.timer(a.ms, { type = "tick" }) end
            return env.services.fetch("x"):map(function(v) return { type = "fetched", value = v } end)
          end,
          reduce = function(s, m)
            if m.type == "text" then s.text = m.text; s.log[#s.log + 1] = m.text
            elseif m.type == "tick" then s.ticks = s.ticks + 1
            else s.fetched = m.value end
            return s
          end,
        }
        """

    struct FieldView: Decodable, Equatable, Sendable { let text: String; let ticks: Int; let fetched: String }

    private var folder: PluginFolder!
    override func setUpWithError() throws { folder = try PluginFolder(["field/init.lua": Self.field]) }
    override func tearDown() { folder = nil }

    private func host(_ executor: FeatureHost.StateExecutor = .mainActor) throws -> FeatureHost {
        try FeatureHost(configuration: .init(searchPaths: [folder.dir], executor: executor))
    }

    func testEveryKeystrokeReadsBackAtOnceWithNoMainActorTurnBetween() throws {
        XCTAssertTrue(Thread.isMainThread)
        let feature = try host().load("field")
        feature.start()
        try MainActor.assumeIsolated {
            let model = try FeatureViewModel(feature, as: FieldView.self)
            // A text field bound through send: each keystroke appends to what the view shows.
            let typed = "hello moonflow!"
            for (n, ch) in typed.enumerated() {
                try model.send(["type": "setText", "text": .string(LuaString(model.view.text + String(ch)))])
                XCTAssertEqual(model.view.text, String(typed.prefix(n + 1)), "keystroke \(n + 1)")
                XCTAssertEqual(feature.state["text"], .string(LuaString(String(typed.prefix(n + 1)))))
            }
            XCTAssertEqual(model.view.text, typed)
            XCTAssertEqual(typed.count, 15)
        }
    }

    func testSwiftUIIsToldOfAChangedViewAndNotOfAnEqualOne() throws {
        let feature = try host().load("field")
        feature.start()
        try MainActor.assumeIsolated {
            let model = try FeatureViewModel(feature, as: FieldView.self)
            func changes(_ body: () throws -> Void) rethrows -> Int {
                let count = Locked(0)
                withObservationTracking { MainActor.assumeIsolated { _ = model.view } } onChange: { count.withLock { $0 += 1 } }
                try body()
                return count.withLock { $0 }
            }
            XCTAssertEqual(try changes { try model.send(["type": "setText", "text": "a"]) }, 1)
            // The same text again: a new state (the log grows) that decodes to the same view.
            XCTAssertEqual(try changes { try model.send(["type": "setText", "text": "a"]) }, 0)
            XCTAssertEqual(model.view.text, "a")
        }
    }

    func testAnActionAnObserverSendsRunsBeforeTheOuterSendReturns() throws {
        let feature = try host().load("field")
        let token = feature.observe(kinds: .state) { [weak feature] event in
            guard case .state(let state, _) = event, state["text"] == "a" else { return }
            try? feature?.send(["type": "setText", "text": "ab"])
        }
        defer { token.cancel() }
        feature.start()
        try feature.send(["type": "setText", "text": "a"])
        XCTAssertEqual(feature.state["text"], "ab")
        XCTAssertEqual(feature.state["log"], ["a", "ab"], "in order")
    }

    func testTimersFireOnTheMainThreadInRealTime() throws {
        let feature = try host().load("field")
        let fired = expectation(description: "the timer's mutation is reduced")
        let onMain = Locked<[Bool]>([])
        let token = feature.observe(kinds: .state) { event in
            onMain.withLock { $0.append(Thread.isMainThread) }
            if case .state(let state, _) = event, state["ticks"] == 1 { fired.fulfill() }
        }
        defer { token.cancel() }
        feature.start()
        let started = Date()
        try feature.send(["type": "later", "ms": 30])
        XCTAssertEqual(feature.state["ticks"], 0, "not before its time")
        wait(for: [fired], timeout: 5)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.025)
        XCTAssertEqual(onMain.withLock { $0 }, [true, true], "every state was delivered on the main thread")
    }

    func testServicesRunOffTheMainThreadAndTheirResultsReenterOnIt() throws {
        let host = try host()
        let serviceOnMain = Locked<Bool?>(nil)
        host.register(service: "fetch") { _ in
            serviceOnMain.withLock { $0 = Thread.isMainThread }
            try await Task.sleep(nanoseconds: 5_000_000)
            return "got"
        }
        let feature = try host.load("field")
        let arrived = expectation(description: "the service's result is reduced")
        let reducedOnMain = Locked<Bool?>(nil)
        let token = feature.observe(kinds: .state) { event in
            guard case .state(let state, _) = event, state["fetched"] == "got" else { return }
            reducedOnMain.withLock { $0 = Thread.isMainThread }
            arrived.fulfill()
        }
        defer { token.cancel() }
        feature.start()
        try feature.send(["type": "fetch"])
        wait(for: [arrived], timeout: 5)
        XCTAssertEqual(serviceOnMain.withLock { $0 }, false)
        XCTAssertEqual(reducedOnMain.withLock { $0 }, true)
    }

    func testOnAQueueHostTheViewCatchesUpWithTheLatestState() throws {
        let feature = try host(.queue).load("field")
        feature.start()
        let model = try MainActor.assumeIsolated { try FeatureViewModel(feature, as: FieldView.self) }
        for n in 1...500 { try feature.send(["type": "setText", "text": .string(LuaString("t\(n)"))]) }
        let deadline = Date().addingTimeInterval(5)
        while MainActor.assumeIsolated({ model.view.text }) != "t500" && Date() < deadline {
            RunLoop.main.run(until: Date().addingTimeInterval(0.01))
        }
        XCTAssertEqual(MainActor.assumeIsolated { model.view.text }, "t500")
    }

    /// A view that counts how often a state is decoded into it.
    struct CountedView: Decodable, Sendable {
        static let decodes = Locked(0)
        let text: String
        init(from decoder: any Decoder) throws {
            text = try decoder.container(keyedBy: CodingKey.self).decode(String.self, forKey: .text)
            Self.decodes.withLock { $0 += 1 }
        }
        enum CodingKey: String, Swift.CodingKey { case text }
    }

    func testStatesThatArriveWhileTheMainActorIsBusyAreDecodedOnceForTheLatest() throws {
        let host = try host(.queue)
        let feature = try host.load("field")
        feature.start()
        let model = try MainActor.assumeIsolated { try FeatureViewModel(feature, as: CountedView.self) }
        CountedView.decodes.withLock { $0 = 0 }
        // The main actor gets no turn while 500 states are delivered on the host's queue.
        for n in 1...500 { try feature.send(["type": "setText", "text": .string(LuaString("t\(n)"))]) }
        host.perform {}
        let deadline = Date().addingTimeInterval(5)
        while MainActor.assumeIsolated({ model.view.text }) != "t500" && Date() < deadline {
            RunLoop.main.run(until: Date().addingTimeInterval(0.01))
        }
        XCTAssertEqual(MainActor.assumeIsolated { model.view.text }, "t500")
        XCTAssertEqual(CountedView.decodes.withLock { $0 }, 1, "only the latest of the waiting states is decoded")
    }
}
