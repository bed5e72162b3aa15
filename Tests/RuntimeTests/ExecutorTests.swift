import Foundation
import Runtime
import Streams
import XCTest

final class ExecutorTests: XCTestCase {
    func testDirectExecutorRunsOnTheCallersThread() throws {
        let caller = Thread.current
        let ranHere = DirectExecutor.shared.perform { Thread.current == caller }
        XCTAssertTrue(ranHere)
    }

    func testSerialExecutorNeverOverlapsAndKeepsOrder() async throws {
        let executor = SerialQueueExecutor(label: "test.serial")
        let log = Locked<[Int]>([])
        let active = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<50 {
                executor.enqueue {
                    active.mutate { $0 += 1 }
                    XCTAssertEqual(active.value, 1, "serial work overlapped")
                    log.mutate { $0.append(index) }
                    active.mutate { $0 -= 1 }
                }
            }
            group.addTask { _ = try? await executor.submit { 0 } }
        }
        _ = try await executor.submit { 0 }
        XCTAssertEqual(log.value, Array(0..<50))
    }

    func testConcurrentExecutorRunsWorkInParallel() throws {
        let executor = ConcurrentQueueExecutor(label: "test.concurrent")
        let bothStarted = DispatchGroup()
        bothStarted.enter()
        bothStarted.enter()
        let finished = DispatchGroup()
        for _ in 0..<2 {
            finished.enter()
            executor.enqueue {
                bothStarted.leave()
                // Each waits for the other: only parallel execution gets past this.
                _ = bothStarted.wait(timeout: .now() + 5)
                finished.leave()
            }
        }
        XCTAssertEqual(finished.wait(timeout: .now() + 5), .success)
    }

    func testNestedUseCasesOnOneSerialExecutorDoNotDeadlock() async throws {
        let executor = SerialQueueExecutor(label: "test.nested")
        let now = UseCase<Void, Int>(executor: executor) { _ in 1_000 }
        let elapsed = UseCase<Int, Int>(executor: executor) { since in
            // A blocking nested call on the same serial executor: must run inline.
            try now.execute(()) - since
        }
        let outer = UseCase<Int, Int>(executor: executor) { since in try elapsed.execute(since) * 2 }
        let result = try await withTimeout(seconds: 5) { try await outer.execute(400) }
        XCTAssertEqual(result, 1_200)
        // And the blocking form from outside any executor works too.
        let blocking: () throws -> Int = { try outer.execute(500) }
        XCTAssertEqual(try blocking(), 1_000)
    }

    func testNestedUseCasesAcrossTwoSerialExecutorsDoNotDeadlock() async throws {
        // a -> b -> a: the innermost call is re-entrant on `a`, which is blocked waiting for `b`.
        let a = SerialQueueExecutor(label: "test.a")
        let b = SerialQueueExecutor(label: "test.b")
        let inner = UseCase<Void, String>(executor: a) { _ in "inner" }
        let middle = UseCase<Void, String>(executor: b) { _ in try inner.execute(()) + "+middle" }
        let outer = UseCase<Void, String>(executor: a) { _ in try middle.execute(()) + "+outer" }
        let result = try await withTimeout(seconds: 5) { try await outer.execute(()) }
        XCTAssertEqual(result, "inner+middle+outer")
    }

    func testUseCaseRunsOnItsExecutorUnlessOverridden() async throws {
        let executor = SerialQueueExecutor(label: "test.where")
        let probe = UseCase<Void, Bool>(executor: executor) { _ in executor.isCurrent }
        let onOwn = try await probe.execute(())
        let onDirect = try await probe.execute((), on: .direct)
        XCTAssertTrue(onOwn)
        XCTAssertFalse(onDirect)
    }

    func testUseCaseErrorsReachTheCaller() async {
        struct Boom: Error {}
        let failing = UseCase<Void, Int>(executor: .serial("test.error")) { _ in throw Boom() }
        do {
            _ = try await failing.execute(())
            XCTFail("expected an error")
        } catch {
            XCTAssertTrue(error is Boom)
        }
        let blocking: () throws -> Int = { try failing.execute(()) }
        XCTAssertThrowsError(try blocking())
    }

    /// Five pieces of work that block, on a pool of four threads: four run at once (more than
    /// the cooperative pool has threads on 2 cores), never five.
    func testAThreadPoolRunsUpToItsCountAtOnceOnThreadsOfItsOwn() async throws {
        let pool = ThreadPoolExecutor(label: "test.pool", threads: 4)
        let running = Locked(0)
        let most = Locked(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<5 {
                group.addTask {
                    try await pool.submit {
                        let now = running.withLock { count -> Int in
                            count += 1
                            return count
                        }
                        most.mutate { $0 = max($0, now) }
                        Thread.sleep(forTimeInterval: 0.3)
                        running.mutate { $0 -= 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        XCTAssertEqual(most.value, 4)
    }

    /// A task cancelled while its work waits for the executor ends at once with
    /// `CancellationError`, and the work never runs. It used to wait for its turn and run.
    func testSubmittedWorkCancelledBeforeItsTurnNeverRuns() async throws {
        let pool = ThreadPoolExecutor(label: "test.cancel", threads: 1)
        let busy = Task { try await pool.submit { Thread.sleep(forTimeInterval: 1.5) } }
        try await Task.sleep(nanoseconds: 100_000_000)
        let ran = Locked(false)
        let waiting = Task { try await pool.submit { ran.mutate { $0 = true } } }
        try await Task.sleep(nanoseconds: 50_000_000)
        let cancelled = Date()
        waiting.cancel()
        let outcome = try await withTimeout(seconds: 10) { await Result { try await waiting.value } }
        XCTAssertLessThan(Date().timeIntervalSince(cancelled), 1, "the wait ended when its task was cancelled")
        XCTAssertThrowsError(try outcome.get()) { XCTAssertTrue($0 is CancellationError, "\($0)") }
        try await busy.value
        _ = try await pool.submit { 0 }
        XCTAssertFalse(ran.value, "cancelled work ran")
    }
}

/// Fails instead of hanging when `body` does not finish in time (a deadlock shows as a failure).
func withTimeout<T: Sendable>(seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let done = Locked(false)
    return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        @Sendable func finish(_ result: Result<T, any Error>) {
            var first = false
            done.mutate { if !$0 { $0 = true; first = true } }
            if first { continuation.resume(with: result) }
        }
        Task { finish(await Result { try await body() }) }
        Task {
            try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
            finish(.failure(TimeoutError()))
        }
    }
}

extension Result where Failure == any Error {
    init(_ body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

struct TimeoutError: Error {}
