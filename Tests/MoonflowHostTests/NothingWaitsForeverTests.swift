import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import PluginFixtures
import Streams
import XCTest

/// No await of the embedding API waits for ever: `idle()` awaited inside a Swift service of the
/// same host is an error that says so, every wait ends when its task is cancelled, and services
/// that block run on threads of their own, off Swift's cooperative pool.
final class NothingWaitsForeverTests: XCTestCase {
    /// A feature whose `ask` action calls the Swift service `check`.
    static let plugins: [String: String] = [
        "asker/init.lua": """
        local mf = require "moonflow"
        return mf.feature {
          name = "asker", initial = { answers = {} },
          actions = { ask = {} }, mutations = { answered = { value = "any" } },
          handle = function(a, s, env)
            return env.services.check():map(function(v) return { type = "answered", value = v } end)
          end,
          reduce = function(s, m) s.answers[#s.answers + 1] = m.value; return s end,
        }
        """,
        "shop/init.lua": """
        local mf = require "moonflow"
        return mf.compose { name = "shop", children = { asker = "asker" },
          route = function(action) return "asker", action end,
          combine = function(states) return { answers = states.asker.answers } end }
        """,
    ]

    /// A service that awaits `idle()` of its own feature, or of the composite over that feature,
    /// gets an error naming the wait, the service and the fix, and the feature reports it. It
    /// used to wait for itself for ever, and nothing said so.
    func testIdleAwaitedInsideAServiceOfTheSameHostIsAnErrorNotAHang() async throws {
        for spec in ["asker", "shop"] {
            let folder = try PluginFolder(Self.plugins)
            let host = try FeatureHost(configuration: .init(searchPaths: [folder.dir]))
            let awaited = Locked<(any RunningFeature)?>(nil)
            let caught = Locked<String?>(nil)
            host.register(service: "check") { _ in
                do {
                    try await awaited.withLock { $0 }!.idle()
                } catch {
                    caught.withLock { $0 = "\(error)" }
                    throw error
                }
                return "idle"
            }
            let feature = try await host.load(spec)
            awaited.withLock { $0 = feature }
            let errors = feature.errors
            feature.start()
            try feature.send(["type": "ask"])

            let reported = await finished(within: 10) { () -> FeatureError? in
                for await error in errors { return error }
                return nil
            }
            guard case .success(let error?) = reported else {
                let what = String(describing: reported)
                XCTFail("\(spec): no error within 10 s, the service still waits for itself: \(what)")
                continue
            }
            let message = try XCTUnwrap(caught.withLock { $0 }, spec)
            for words in ["idle() of feature '\(spec)'", "inside Swift service 'check'", "send an action"] {
                XCTAssertTrue(message.contains(words), "\(spec): \(message)")
                XCTAssertTrue(error.message.contains(words), "\(spec): the feature reports it: \(error.message)")
            }
            XCTAssertEqual(error.stage, .service, spec)
            // Outside the service the same wait ends: nothing is in flight any more.
            let settled = await finished(within: 10) { try await feature.idle() }
            XCTAssertNotNil(try settled?.get(), spec)
        }
    }

    /// A task awaiting `idle()` while a service takes its time ends with `CancellationError` as
    /// soon as it is cancelled. It used to ignore the cancellation and wait for the service.
    func testACancelledTaskAwaitingIdleEndsAtOnce() async throws {
        let folder = try PluginFolder(Self.plugins)
        let host = try FeatureHost(configuration: .init(searchPaths: [folder.dir]))
        host.register(service: "check") { _ in
            try await Task.sleep(nanoseconds: 60_000_000_000)
            return "late"
        }
        let feature = try await host.load("asker")
        defer { feature.dispose() }
        feature.start()
        try feature.send(["type": "ask"])
        let waiter = Task { try await feature.idle() }
        try await Task.sleep(nanoseconds: 50_000_000)
        let cancelled = Date()
        waiter.cancel()
        let outcome = await finished(within: 10) { try await waiter.value }
        let took = Date().timeIntervalSince(cancelled)
        guard case .failure(let error)? = outcome else {
            return XCTFail("idle() went on waiting after its task was cancelled: \(String(describing: outcome))")
        }
        XCTAssertTrue(error is CancellationError, "\(error)")
        XCTAssertLessThan(took, 2, "idle() ended \(took) s after the cancel")
    }

    /// `host.load` awaited while the host's queue is busy (a long handler) ends with
    /// `CancellationError` when its task is cancelled, not when the queue gets to it.
    func testACancelledAsyncLoadEndsWithoutWaitingForTheQueue() async throws {
        let folder = try PluginFolder(
            Self.plugins.merging([
                "busy/init.lua": """
                local mf = require "moonflow"
                return mf.feature {
                  name = "busy", initial = {}, actions = { spin = {} }, mutations = {},
                  handle = function()
                    local t = os.clock()
                    while os.clock() - t < 3 do end
                  end,
                  reduce = function(s) return s end,
                }
                """
            ]) { a, _ in a })
        let host = try FeatureHost(configuration: .init(searchPaths: [folder.dir], timeLimitMs: 20_000))
        let busy = try await host.load("busy")
        busy.start()
        try busy.send(["type": "spin"])  // holds the queue for 3 s of CPU
        let load = Task { try await host.load("asker") }
        try await Task.sleep(nanoseconds: 50_000_000)
        let cancelled = Date()
        load.cancel()
        let outcome = await finished(within: 30) { try await load.value }
        let took = Date().timeIntervalSince(cancelled)
        guard case .failure(let error)? = outcome else {
            return XCTFail("the load was not cancelled: \(String(describing: outcome))")
        }
        XCTAssertTrue(error is CancellationError, "\(error)")
        XCTAssertLessThan(took, 1.5, "load ended \(took) s after the cancel, when the queue was free")
    }

    /// `connect(devServer:)` to a server that takes the connection and says nothing ends when
    /// its task is cancelled, not after its timeout.
    func testACancelledConnectEndsBeforeItsTimeout() async throws {
        let (fd, port) = try silentListener()
        defer { close(fd) }
        let host = try FeatureHost(configuration: .init(searchPaths: []))
        let connect = Task { try await host.connect(devServer: "http://127.0.0.1:\(port)/?token=abc", timeout: 600) }
        try await Task.sleep(nanoseconds: 200_000_000)
        let cancelled = Date()
        connect.cancel()
        let outcome = await finished(within: 30) { try await connect.value }
        let took = Date().timeIntervalSince(cancelled)
        guard case .failure(let error)? = outcome else {
            return XCTFail("connect was not cancelled: \(String(describing: outcome))")
        }
        XCTAssertTrue(error is CancellationError, "\(error)")
        XCTAssertLessThan(took, 2, "connect ended \(took) s after the cancel")
        let loadNow: () throws -> RunningFeature = { try host.load("counter") }
        XCTAssertThrowsError(try loadNow(), "nothing was connected")
    }

    /// Twice as many services as the machine has cores, each blocking 1.5 s on the declared
    /// threads: all run at once, and meanwhile another service answers, a `Task.sleep` on the
    /// main actor and one on the cooperative pool wake on time (well under the 1 s bound). On
    /// the cooperative pool, as before, they held every thread: the sleeps and the other service
    /// waited ≥ 1.5 s (on 2 cores, 4 services of 1 s delayed them by 2 s).
    func testBlockingServicesOnTheirOwnThreadsDelayNothingElse() async throws {
        let count = max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)
        let folder = try PluginFolder([
            "work/init.lua": """
            local mf = require "moonflow"
            return mf.feature {
              name = "work", initial = { done = 0, pongs = 0 },
              actions = { block = {}, ping = {} }, mutations = { blocked = {}, ponged = {} },
              handle = function(a, s, env)
                if a.type == "block" then
                  return env.services.block():map(function() return { type = "blocked" } end)
                end
                return env.services.ping():map(function() return { type = "ponged" } end)
              end,
              reduce = function(s, m)
                if m.type == "blocked" then s.done = s.done + 1 else s.pongs = s.pongs + 1 end
                return s
              end,
            }
            """
        ])
        let host = try FeatureHost(configuration: .init(searchPaths: [folder.dir]))
        let started = Locked(0)
        host.register(service: "block", on: .dedicatedThreads(count, label: "blocking")) { _ in
            started.withLock { $0 += 1 }
            Thread.sleep(forTimeInterval: 1.5)  // a synchronous call that blocks its thread
            return true
        }
        host.register(service: "ping") { _ in
            try await Task.sleep(nanoseconds: 10_000_000)
            return true
        }
        let work = try await host.load("work")
        work.start()
        for _ in 0..<count { try work.send(["type": "block"]) }
        let deadline = Date().addingTimeInterval(1)
        while started.withLock({ $0 }) < count && Date() < deadline { usleep(1000) }
        XCTAssertEqual(started.withLock { $0 }, count, "all \(count) blocking calls run at once")

        let pinged = Date()
        try work.send(["type": "ping"])
        // Each timed from here: a task that waits for a thread to start waits too.
        let onMain = Task { @MainActor in
            try await Task.sleep(nanoseconds: 100_000_000)
            return Date().timeIntervalSince(pinged)
        }
        let onPool = Task.detached {
            try await Task.sleep(nanoseconds: 100_000_000)
            return Date().timeIntervalSince(pinged)
        }
        let mainSlept = try await finished(within: 10) { try await onMain.value }?.get()
        let poolSlept = try await finished(within: 10) { try await onPool.value }?.get()
        while work.state["pongs"] != 1 && Date().timeIntervalSince(pinged) < 10 {
            try await Task.sleep(nanoseconds: 1_000_000)
        }
        let ponged = Date().timeIntervalSince(pinged)
        XCTAssertLessThan(ponged, 1, "another service answered \(ponged) s after it was called")
        XCTAssertLessThan(try XCTUnwrap(mainSlept), 1, "a 0.1 s sleep on the main actor took \(mainSlept ?? -1) s")
        XCTAssertLessThan(try XCTUnwrap(poolSlept), 1, "a 0.1 s sleep on the pool took \(poolSlept ?? -1) s")

        let settled = await finished(within: 30) { try await work.idle() }
        XCTAssertNotNil(try settled?.get())
        XCTAssertEqual(work.state["done"], .integer(Int64(count)), "every blocking call's result was reduced")
    }

    /// On the virtual clock, results of services on declared threads re-enter in call order,
    /// whichever finishes first: 3, 2 and 1 are called in that order and finish 1, 2, 3.
    func testBlockingServiceResultsReenterInCallOrderOnTheVirtualClock() throws {
        let h = try Harness(["probe/init.lua": Probe.source("return env.services.block(action.n)")])
        h.host.register(service: "block", on: .dedicatedThreads(3)) { args in
            Thread.sleep(forTimeInterval: Double(args[0].intValue ?? 0) * 0.1)
            return args[0]
        }
        try h.load()
        for n in [3, 2, 1] { try h.feature.send(["type": "go", "n": .integer(Int64(n))]) }
        h.settle()
        XCTAssertEqual(h.log.values.filter { !$0.hasSuffix("|") }, ["0:3", "0:2", "0:1"])
    }

    /// `body`'s outcome, or nil when it has not finished after `seconds`: it runs in a task of
    /// its own, so a body that never ends (or ignores cancellation) cannot hold the test.
    private func finished<T: Sendable>(
        within seconds: Double, _ body: @escaping @Sendable () async throws -> T
    ) async -> Result<T, any Error>? {
        let outcome = Locked<Result<T, any Error>?>(nil)
        let task = Task {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
        }
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if let result = outcome.withLock({ $0 }) { return result }
            if Date() > deadline {
                task.cancel()
                return nil
            }
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
    }

    /// A socket on 127.0.0.1 that listens and never accepts: a connection is made (the kernel
    /// takes it) and nothing is ever said on it.
    private func silentListener() throws -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw NSError(domain: "listen", code: Int(errno))
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
