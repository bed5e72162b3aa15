import Foundation
import Streams
import StreamsTesting
import XCTest

/// Sources sending from several threads at once into the multi-source operators: every value
/// must arrive exactly once, events must never overlap, and the stream must terminate once.
private let threads = 4
private let perThread = 2_000

final class ConcurrencyTests: XCTestCase {
    /// A producer that sends `count` values from its own new thread, then completes.
    private static func threaded(_ base: Int, count: Int) -> Producer<Int> {
        Producer { observer, lifetime in
            let thread = Thread {
                for offset in 0..<count where !lifetime.hasEnded {
                    observer.send(value: base + offset)
                }
                observer.sendCompleted()
            }
            thread.start()
        }
    }

    /// An observer that checks events never overlap and records them, signalling at the end.
    private final class Checker: @unchecked Sendable {
        private let lock = NSLock()
        private var inside = false
        private(set) var overlapped = false
        private(set) var values: [Int] = []
        private(set) var terminals = 0
        let done: XCTestExpectation

        init(_ done: XCTestExpectation) {
            self.done = done
        }

        var observer: Observer<Int> {
            Observer { event in
                self.lock.withLock {
                    if self.inside { self.overlapped = true }
                    self.inside = true
                }
                Thread.sleep(forTimeInterval: 0)
                self.lock.withLock {
                    switch event {
                    case .value(let value): self.values.append(value)
                    default: self.terminals += 1
                    }
                    self.inside = false
                }
                if event.isTerminating { self.done.fulfill() }
            }
        }
    }

    func testMergeFromSeveralThreads() {
        let checker = Checker(expectation(description: "merge completes"))
        let sources = (0..<threads).map { Self.threaded($0 * perThread, count: perThread) }
        Producer.merge(sources).start(checker.observer)
        wait(for: [checker.done], timeout: 30)
        XCTAssertFalse(checker.overlapped)
        XCTAssertEqual(checker.terminals, 1)
        XCTAssertEqual(Set(checker.values), Set(0..<(threads * perThread)))
        XCTAssertEqual(checker.values.count, threads * perThread)
    }

    func testCombineLatestFromSeveralThreads() {
        let checker = Checker(expectation(description: "combineLatest completes"))
        let sources = (0..<threads).map { Self.threaded($0 * perThread, count: perThread) }
        let seenLast = Locked<[Int]>([])
        Producer.combineLatest(sources)
            .map { values -> Int in
                seenLast.withLock { $0 = values }
                return values.reduce(0, +)
            }
            .start(checker.observer)
        wait(for: [checker.done], timeout: 30)
        XCTAssertFalse(checker.overlapped)
        XCTAssertEqual(checker.terminals, 1)
        let lastValues = (0..<threads).map { $0 * perThread + perThread - 1 }
        XCTAssertEqual(seenLast.withLock { $0 }, lastValues, "the final combination holds every source's last value")
        XCTAssertEqual(checker.values.last, lastValues.reduce(0, +))
    }

    func testFlatMapWithInnersOnDifferentThreads() {
        for strategy in [FlattenStrategy.merge, .concat, .concurrent(limit: 2)] {
            let checker = Checker(expectation(description: "flatMap(\(strategy)) completes"))
            Producer.from(0..<threads)
                .flatMap(strategy) { index in Self.threaded(index * perThread, count: perThread) }
                .start(checker.observer)
            wait(for: [checker.done], timeout: 30)
            XCTAssertFalse(checker.overlapped, "\(strategy)")
            XCTAssertEqual(checker.terminals, 1, "\(strategy)")
            XCTAssertEqual(checker.values.count, threads * perThread, "\(strategy)")
            XCTAssertEqual(Set(checker.values).count, threads * perThread, "\(strategy)")
            if strategy == .concat {
                XCTAssertEqual(checker.values, Array(0..<(threads * perThread)), "concat keeps order")
            }
        }
    }

    func testSignalSentFromManyThreadsReachesObserversSerially() {
        let checker = Checker(expectation(description: "signal completes"))
        let (signal, input) = Signal<Int>.pipe()
        signal.producer.scan(0) { count, _ in count + 1 }.start(checker.observer)
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for offset in 0..<perThread { input.send(value: thread * perThread + offset) }
        }
        input.sendCompleted()
        wait(for: [checker.done], timeout: 30)
        XCTAssertFalse(checker.overlapped)
        XCTAssertEqual(checker.values.last, threads * perThread)
    }

    func testWithLatestFromAndTakeUntilAcrossThreads() {
        let checker = Checker(expectation(description: "takeUntil completes"))
        let (stop, stopInput) = Signal<Void>.pipe()
        let (latest, latestInput) = Signal<Int>.pipe()
        latestInput.send(value: 0)
        let subscription = Self.threaded(0, count: perThread * 4)
            .withLatestFrom(latest.producer.startWith(-1)) { value, _ in value }
            .takeUntil(stop.producer)
            .start(checker.observer)
        let feeder = Thread {
            for value in 0..<perThread { latestInput.send(value: value) }
            stopInput.send(value: ())
        }
        feeder.start()
        wait(for: [checker.done], timeout: 30)
        subscription.dispose()
        XCTAssertFalse(checker.overlapped)
        XCTAssertEqual(checker.terminals, 1)
        XCTAssertEqual(checker.values, Array(checker.values.sorted()), "values keep their source order")
    }
}
