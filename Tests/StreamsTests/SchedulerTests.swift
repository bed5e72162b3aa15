import Streams
import StreamsTesting
import XCTest

final class SchedulerTests: XCTestCase {
    func testTestSchedulerRunsDueActionsInTimeThenSchedulingOrder() {
        let scheduler = TestScheduler()
        let log = Locked<[String]>([])
        scheduler.schedule(after: 20) { log.withLock { $0.append("b@\(scheduler.now)") } }
        scheduler.schedule(after: 10) { log.withLock { $0.append("a@\(scheduler.now)") } }
        scheduler.schedule(after: 20) { log.withLock { $0.append("c@\(scheduler.now)") } }
        XCTAssertEqual(scheduler.pendingCount, 3)
        XCTAssertEqual(scheduler.nextDueTime, 10)
        scheduler.advance(by: 15)
        XCTAssertEqual(log.withLock { $0 }, ["a@10"])
        XCTAssertEqual(scheduler.now, 15)
        scheduler.advance(to: 20)
        XCTAssertEqual(log.withLock { $0 }, ["a@10", "b@20", "c@20"])
        XCTAssertTrue(scheduler.isIdle)
        XCTAssertNil(scheduler.nextDueTime)
    }

    func testActionsScheduledNowDuringAnAdvanceRunInThatAdvance() {
        let scheduler = TestScheduler()
        let log = Locked<[String]>([])
        scheduler.schedule(after: 10) {
            log.withLock { $0.append("outer") }
            scheduler.schedule { log.withLock { $0.append("inner@\(scheduler.now)") } }
        }
        scheduler.advance(by: 10)
        XCTAssertEqual(log.withLock { $0 }, ["outer", "inner@10"])
    }

    func testCancelledActionsDoNotRunOrCount() {
        let scheduler = TestScheduler()
        let ran = Locked(false)
        let pending = scheduler.schedule(after: 5) { ran.withLock { $0 = true } }
        pending.dispose()
        XCTAssertTrue(scheduler.isIdle)
        scheduler.run()
        XCTAssertFalse(ran.withLock { $0 })
    }

    /// What an action holds goes when it is cancelled, or when it has run once, not at its due
    /// time: a virtual clock may never get there (one dropped with its host).
    func testTestSchedulerLetsGoOfCancelledAndFinishedActions() {
        final class Held: Sendable {}
        let scheduler = TestScheduler()
        weak var cancelled: Held?
        weak var finished: Held?
        var cancel: Disposable?
        var done: Disposable?
        do {
            let a = Held(), b = Held()
            cancelled = a
            finished = b
            cancel = scheduler.schedule(after: 1_000) { _ = a }
            done = scheduler.schedule { _ = b }
        }
        XCTAssertNotNil(cancelled, "kept while it is scheduled")
        cancel?.dispose()
        XCTAssertNil(cancelled)
        scheduler.advance()
        XCTAssertNil(finished, "its disposable, still held, does not keep it")
        XCTAssertNotNil(done)
    }

    func testRepeatingActionAndRun() {
        let scheduler = TestScheduler()
        let ticks = Locked<[Int]>([])
        let repeating = Locked<Disposable?>(nil)
        repeating.withLock {
            $0 = scheduler.schedule(after: 10, interval: 5) {
                ticks.withLock { $0.append(scheduler.now) }
                if scheduler.now >= 20 { repeating.withLock { $0?.dispose() } }
            }
        }
        scheduler.run()
        XCTAssertEqual(ticks.withLock { $0 }, [10, 15, 20])
        XCTAssertEqual(scheduler.now, 20)
    }

    func testImmediateSchedulerRunsSynchronously() {
        let ran = Locked(false)
        ImmediateScheduler.shared.schedule { ran.withLock { $0 = true } }
        XCTAssertTrue(ran.withLock { $0 })
    }

    func testQueueSchedulerRunsDelayedAndRepeatingActionsOnItsQueue() {
        let scheduler = QueueScheduler(label: "test")
        let done = expectation(description: "three ticks")
        let ticks = Locked(0)
        let timer = Locked<Disposable?>(nil)
        timer.withLock {
            $0 = scheduler.schedule(after: 5, interval: 5) {
                scheduler.assertOnQueue()
                let count = ticks.withLock { count in
                    count += 1
                    return count
                }
                if count == 3 {
                    timer.withLock { $0?.dispose() }
                    done.fulfill()
                }
            }
        }
        wait(for: [done], timeout: 5)
        XCTAssertGreaterThanOrEqual(scheduler.now, 15)
    }

    func testQueueSchedulerCancelledActionDoesNotRun() {
        let scheduler = QueueScheduler()
        let ran = Locked(false)
        scheduler.schedule(after: 20) { ran.withLock { $0 = true } }.dispose()
        let done = expectation(description: "later action")
        scheduler.schedule(after: 40) { done.fulfill() }
        wait(for: [done], timeout: 5)
        XCTAssertFalse(ran.withLock { $0 })
    }

    func testTimerOnAQueueScheduler() {
        let scheduler = QueueScheduler()
        let done = expectation(description: "timer")
        let values = Locked<[String]>([])
        Producer.timer(10, "tick", on: scheduler).start(
            value: { value in values.withLock { $0.append(value) } },
            completed: { done.fulfill() })
        wait(for: [done], timeout: 5)
        XCTAssertEqual(values.withLock { $0 }, ["tick"])
    }
}
