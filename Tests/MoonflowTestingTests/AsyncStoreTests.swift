import Foundation
import MoonflowTesting
import Testing

/// The async test store under Swift Testing: its steps wait for Swift services suspended, so
/// stores run in parallel on the cooperative pool their services share, on any executor.
@Suite struct AsyncStoreTests {
    /// A page of products through a Swift service: `load` shows `loading` at once and the
    /// products when the service answers; `loadLater` loads after a timer.
    static let shop = """
        local mf = require "moonflow"
        local function load(page, env)
          return env.services.products(page)
            :map(function(items) return { type = "loaded", products = items } end)
            :startWith { type = "loading", page = page }
            :catchError(function(err) return mf.just { type = "failed", message = tostring(err) } end)
        end
        return mf.feature {
          name = "shop",
          initial = { page = 0, products = mf.array(), loading = false },
          actions = { load = { page = "integer" }, loadLater = { page = "integer", ms = "integer" }, count = {} },
          mutations = {
            loading = { page = "integer" }, loaded = { products = "table" },
            failed = { message = "string" }, counted = { n = "integer" },
          },
          handle = function(action, state, env)
            if action.type == "load" then return load(action.page, env) end
            if action.type == "count" then
              return env.services.count():map(function(n) return { type = "counted", n = n } end)
            end
            return mf.timer(action.ms):flatMap(function() return load(action.page, env) end)
          end,
          reduce = function(state, m)
            if m.type == "loading" then
              state.page = m.page
              state.loading = true
            elseif m.type == "loaded" then
              state.products = m.products
              state.loading = false
              return state, { type = "shown", count = #m.products }
            elseif m.type == "failed" then
              state.loading = false
              state.error = m.message
            end
            return state
          end,
        }
        """

    struct Product: Codable, Equatable, Sendable {
        var sku: String
        var price: Int
    }

    struct ShopState: Codable, Equatable, Sendable {
        var page: Int
        var products: [Product]
        var loading: Bool
        var error: String?
    }

    enum ShopAction: Encodable, Sendable {
        case load(page: Int)
        case loadLater(page: Int, ms: Int)
        case count
    }

    enum ShopMutation: Decodable, Equatable, Sendable {
        case loading(page: Int)
        case loaded(products: [Product])
        case failed(message: String)
        case counted(n: Int)

        private enum Key: String, CodingKey { case type, page, products, message, n }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Key.self)
            switch try c.decode(String.self, forKey: .type) {
            case "loading": self = .loading(page: try c.decode(Int.self, forKey: .page))
            case "loaded": self = .loaded(products: try c.decode([Product].self, forKey: .products))
            case "failed": self = .failed(message: try c.decode(String.self, forKey: .message))
            default: self = .counted(n: try c.decode(Int.self, forKey: .n))
            }
        }
    }

    enum ShopEffect: Decodable, Equatable, Sendable {
        case shown(count: Int)

        private enum Key: String, CodingKey { case count }

        init(from decoder: any Decoder) throws {
            self = .shown(count: try decoder.container(keyedBy: Key.self).decode(Int.self, forKey: .count))
        }
    }

    typealias Store = TypedFeatureStore<ShopState, ShopAction>

    /// The folder the plugin is written to, one per test (removed when the test's value goes).
    private let plugins: PluginFolder

    init() throws { plugins = try PluginFolder(["shop/init.lua": Self.shop]) }

    private func store(_ services: [ServiceStub]) throws -> Store {
        try Store("shop", searchPaths: [plugins.path], services: services)
    }

    static func page(_ n: Int) -> [Product] { [Product(sku: "p\(n)", price: n), Product(sku: "q\(n)", price: 2 * n)] }

    /// A service that answers after sleeping (real time), as a network call does.
    static let sleepingProducts = ServiceStub.stub("products") { (page: Int) async throws -> [Product] in
        try await Task.sleep(for: .milliseconds(20))
        return AsyncStoreTests.page(page)
    }

    /// Sixteen tests at once (Swift Testing runs the arguments in parallel), each waiting for a
    /// service that sleeps: with a step that held its thread while it waited, two of them took
    /// both pool threads of a 2-core machine and the services that would wake them never ran.
    @Test(arguments: 0..<16)
    func parallelStoresEachGetTheirServicesAnswer(n: Int) async throws {
        let store = try store([Self.sleepingProducts])
        try await store.send(.load(page: n)) {
            $0.page = n
            $0.loading = true
        }
        try await store.receive(ShopMutation.loaded(products: Self.page(n))) {
            $0.products = Self.page(n)
            $0.loading = false
        }
        try await store.receiveEffect(ShopEffect.shown(count: 2))
        try await store.finish()
    }

    /// The same on a one-thread actor whose service needs that thread: a step that blocked
    /// the thread would never see the answer, and this test would fail at its deadline.
    @Test func aStoreOnAOneThreadActorLeavesTheThreadToItsService() async throws {
        let plugins = self.plugins
        let outcome = try await Deadline.run(seconds: 20) { @OneThread in
            let store = try Store(
                "shop", searchPaths: [plugins.path],
                services: [
                    .stub("products") { (page: Int) async throws -> [Product] in
                        await OneThread.touch()
                        return Self.page(page)
                    }
                ])
            try await store.send(.load(page: 3)) {
                $0.page = 3
                $0.loading = true
            }
            try await store.receive(ShopMutation.loaded(products: Self.page(3))) {
                $0.products = Self.page(3)
                $0.loading = false
            }
            try await store.receiveEffect(ShopEffect.shown(count: 2))
            try await store.finish()
        }
        #expect(outcome == .finished, "the store's steps held the actor's only thread")
    }

    /// On the main actor, with a service that needs the main actor to answer.
    @MainActor @Test func aMainActorTestWaitsWithoutHoldingMain() async throws {
        let store = try store([
            .stub("products") { @MainActor (page: Int) async throws -> [Product] in Self.page(page) }
        ])
        try await store.send(.load(page: 1)) {
            $0.page = 1
            $0.loading = true
        }
        try await store.receive(ShopMutation.loaded(products: Self.page(1))) {
            $0.products = Self.page(1)
            $0.loading = false
        }
        try await store.receiveEffect(ShopEffect.shown(count: 2))
        try await store.finish()
    }

    /// `advance` runs the timer, then waits for the service the timer called.
    @Test func advanceWaitsForTheServiceItsTimerCalled() async throws {
        let store = try store([Self.sleepingProducts])
        try await store.send(.loadLater(page: 2, ms: 100))
        await store.advance(by: 99)
        #expect(try store.state.loading == false)
        await store.advance(by: 1)
        try await store.receive(ShopMutation.loading(page: 2)) {
            $0.page = 2
            $0.loading = true
        }
        try await store.receive(ShopMutation.loaded(products: Self.page(2))) {
            $0.products = Self.page(2)
            $0.loading = false
        }
        try await store.receiveEffect(ShopEffect.shown(count: 2))
        try await store.finish()
    }

    @Test func aServiceWithoutArgumentsAndOneThatThrowsAreStubbedTheSameWay() async throws {
        struct Down: Error, CustomStringConvertible { var description: String { "the shop is down" } }
        let store = try store([
            .stub("count") { () async throws -> Int in 42 },
            .stub("products") { (_: Int) async throws -> [Product] in throw Down() },
        ])
        try await store.send(.count)
        try await store.receive(ShopMutation.counted(n: 42))
        try await store.send(.load(page: 1)) {
            $0.page = 1
            $0.loading = true
        }
        await store.skipReceived()
        #expect(try store.state.error?.contains("the shop is down") == true)
        #expect(try store.state.loading == false)
        try await store.finish()
    }

    @Test func aWrongChangeFailsAtTheTestsLineWithTheDiff() async throws {
        let store = try store([Self.sleepingProducts])
        try await store.send(.load(page: 1)) {
            $0.page = 1
            $0.loading = true
        }
        let message = await failure { try await store.receive(ShopMutation.loaded(products: Self.page(1))) { _ in } }
        let line = #line - 1
        #expect(message.hasPrefix("\(#filePath):\(line): State after receive(loaded) does not match"), "\(message)")
        #expect(message.contains("  - loading = true\n  + loading = false\n"), "\(message)")
        #expect(message.hasSuffix("  - products[2] = nil\n  + products[2] = { price = 2, sku = \"q1\" }"), "\(message)")
    }

    @Test func finishFailsOnWhatArrivedUnasserted() async throws {
        let store = try store([Self.sleepingProducts])
        try await store.send(.load(page: 1)) {
            $0.page = 1
            $0.loading = true
        }
        let failure = await #expect(throws: FeatureStore.Failure.self) { try await store.finish() }
        let message = failure?.message ?? ""
        #expect(message.contains("1 mutation was not received"), "\(message)")
        #expect(message.contains("(from action load { page = 1 })"), "\(message)")
    }

    /// A service that never answers fails the step after the store's timeout, naming the call.
    @Test func aServiceThatNeverAnswersFailsTheStepAfterTheTimeout() async throws {
        let store = try store([
            .stub("products") { (_: Int) async throws -> [Product] in
                try await Task.sleep(for: .seconds(3600))
                return []
            }
        ])
        store.timeout = .milliseconds(200)
        try await store.send(.load(page: 1)) {
            $0.page = 1
            $0.loading = true
        }
        let started = ContinuousClock.now
        let failure = await #expect(throws: FeatureStore.Failure.self) {
            try await store.receive(ShopMutation.loaded(products: []))
        }
        #expect(ContinuousClock.now - started < .seconds(30))
        let message = failure?.message ?? ""
        #expect(message.contains("none arrived"), "\(message)")
    }
}

/// What a step threw: a store's failure message, or a line saying it did not fail.
func failure(_ body: () async throws -> Void) async -> String {
    do { try await body() } catch let failure as FeatureStore.Failure { return failure.message } catch {
        return "unexpected \(error)"
    }
    return "no failure"
}

/// A folder of plugin files for one test, removed with it.
final class PluginFolder: Sendable {
    let path: String

    init(_ files: [String: String]) throws {
        path = (NSTemporaryDirectory() as NSString).appendingPathComponent("mfasync\(UUID().uuidString.prefix(8))")
        for (name, text) in files {
            let full = (path as NSString).appendingPathComponent(name)
            try FileManager.default.createDirectory(
                atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try text.write(toFile: full, atomically: true, encoding: .utf8)
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// An actor whose executor is one thread of its own: what a step must not hold while it waits.
@globalActor actor OneThread {
    static let shared = OneThread()
    private static let executor = OneThreadExecutor()
    nonisolated var unownedExecutor: UnownedSerialExecutor { Self.executor.asUnownedSerialExecutor() }

    /// Runs on the actor's thread, and returns.
    static func touch() async { await shared.nothing() }
    private func nothing() {}
}

/// Runs the jobs given to it, in order, on one thread it starts.
final class OneThreadExecutor: SerialExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    init() {
        let thread = Thread { [self] in
            while true {
                condition.lock()
                while jobs.isEmpty { condition.wait() }
                let job = jobs.removeFirst()
                condition.unlock()
                job.runSynchronously(on: asUnownedSerialExecutor())
            }
        }
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }
}

/// Waits for a task at most a number of seconds, so a test whose body blocks fails at its
/// deadline instead of hanging the run (the body's task is left behind when it does).
enum Deadline {
    enum Outcome: Equatable, Sendable { case finished, timedOut }

    static func run(seconds: Double, _ body: @escaping @Sendable () async throws -> Void) async throws -> Outcome {
        let once = Once()
        let result: Result<Outcome, any Error> = await withCheckedContinuation { continuation in
            once.set(continuation)
            Task {
                do {
                    try await body()
                    once.resume(.success(.finished))
                } catch { once.resume(.failure(error)) }
            }
            Task.detached {
                try? await Task.sleep(for: .seconds(seconds))
                once.resume(.success(.timedOut))
            }
        }
        return try result.get()
    }

    /// Resumes the continuation once, with whichever comes first.
    private final class Once: @unchecked Sendable {
        private let lock = NSLock()
        private var continuation: CheckedContinuation<Result<Outcome, any Error>, Never>?

        func set(_ continuation: CheckedContinuation<Result<Outcome, any Error>, Never>) {
            lock.withLock { self.continuation = continuation }
        }

        func resume(_ result: Result<Outcome, any Error>) {
            let continuation = lock.withLock {
                defer { self.continuation = nil }
                return self.continuation
            }
            continuation?.resume(returning: result)
        }
    }
}
