import Streams
import StreamsTesting
import XCTest

final class TimingOperatorTests: XCTestCase {
    // MARK: debounce

    func testDebounceSendsOnlyAfterAQuietPeriod() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([
            .value(210, 1), .value(250, 2), .value(280, 3), .value(400, 4), .value(520, 5), .completed(700),
        ])
        let res = scheduler.start { xs.producer.debounce(100, on: scheduler) }
        XCTAssertEqual(res.events, [.value(380, 3), .value(500, 4), .value(620, 5), .completed(700)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 700)])
    }

    func testDebounceCompletionFlushesThePendingValue() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1), .value(250, 2), .completed(300)])
        let res = scheduler.start { xs.producer.debounce(100, on: scheduler) }
        XCTAssertEqual(res.events, [.value(300, 2), .completed(300)])
    }

    func testDebounceFailureDropsThePendingValue() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1), .value(250, 2), .failed(300, testError)])
        let res = scheduler.start { xs.producer.debounce(100, on: scheduler) }
        XCTAssertEqual(res.events, [.failed(300, testError)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 300)])
    }

    func testDebounceDisposeCancelsThePendingTimer() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1), .value(950, 2)])
        let res = scheduler.start { xs.producer.debounce(100, on: scheduler) }
        XCTAssertEqual(res.events, [.value(310, 1)])
        XCTAssertEqual(scheduler.pendingCount, 0, "the timer armed at 950 is cancelled at 1000")
    }

    // MARK: delay

    func testDelayShiftsValuesAndCompletion() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1), .value(250, 2), .completed(300)])
        let res = scheduler.start { xs.producer.delay(100, on: scheduler) }
        XCTAssertEqual(res.events, [.value(310, 1), .value(350, 2), .completed(400)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 300)])
    }

    func testDelayForwardsFailureAtOnceAndDropsPendingValues() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1), .value(250, 2), .failed(280, testError)])
        let res = scheduler.start { xs.producer.delay(100, on: scheduler) }
        XCTAssertEqual(res.events, [.failed(280, testError)])
        XCTAssertEqual(scheduler.pendingCount, 0)
    }

    func testDelayOfSynchronousValues() {
        let scheduler = TestScheduler()
        let res = scheduler.start { Producer.from([1, 2, 3]).delay(50, on: scheduler) }
        XCTAssertEqual(res.events, [.value(250, 1), .value(250, 2), .value(250, 3), .completed(250)])
    }

    func testDelayDisposeCancelsPendingEvents() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1), .value(980, 2)])
        let res = scheduler.start { xs.producer.delay(100, on: scheduler) }
        XCTAssertEqual(res.events, [.value(310, 1)])
        XCTAssertTrue(scheduler.isIdle)
    }

    // MARK: timer and interval

    func testTimerSendsItsValueThenCompletes() {
        let scheduler = TestScheduler()
        let res = scheduler.start { Producer.timer(300, "go", on: scheduler) }
        XCTAssertEqual(res.events, [.value(500, "go"), .completed(500)])
    }

    func testTimerDefaultsToZeroAndCanBeCancelled() {
        let scheduler = TestScheduler()
        let recorder = TestRecorder<Int>(scheduler)
        let subscription = Producer.timer(100, on: scheduler).start(recorder.observer)
        scheduler.advance(by: 50)
        subscription.dispose()
        scheduler.run()
        XCTAssertEqual(recorder.events, [])
        let second = TestRecorder<Int>(scheduler)
        Producer.timer(100, on: scheduler).start(second.observer)
        scheduler.run()
        XCTAssertEqual(second.events, [.value(150, 0), .completed(150)])
    }

    func testIntervalTicksEveryPeriod() {
        let scheduler = TestScheduler()
        let res = scheduler.start(disposed: 560) { Producer.interval(100, on: scheduler) }
        XCTAssertEqual(res.events, [.value(300, 0), .value(400, 1), .value(500, 2)])
        XCTAssertTrue(scheduler.isIdle, "disposing stops the repetition")
    }

    func testIntervalWithTakeCompletes() {
        let scheduler = TestScheduler()
        let res = scheduler.start { Producer.interval(100, on: scheduler).take(3) }
        XCTAssertEqual(res.events, [.value(300, 0), .value(400, 1), .value(500, 2), .completed(500)])
        XCTAssertTrue(scheduler.isIdle)
    }
}

final class SchedulingOperatorTests: XCTestCase {
    func testObserveOnDeliversThroughTheScheduler() {
        let scheduler = TestScheduler()
        let recorder = TestRecorder<Int>(scheduler)
        scheduler.advance(to: 10)
        Producer.from([1, 2, 3]).observe(on: scheduler).start(recorder.observer)
        XCTAssertEqual(recorder.events, [], "nothing arrives before the scheduler runs")
        scheduler.advance()
        XCTAssertEqual(recorder.events, [.value(10, 1), .value(10, 2), .value(10, 3), .completed(10)])
    }

    func testObserveOnKeepsOrderAcrossThreads() {
        let queue = QueueScheduler(label: "observe-on")
        let done = expectation(description: "completed on the queue")
        let values = Locked<[Int]>([])
        Producer.from(0..<1000).observe(on: queue).start(
            value: { value in
                queue.assertOnQueue()
                values.withLock { $0.append(value) }
            },
            completed: { done.fulfill() })
        wait(for: [done], timeout: 10)
        XCTAssertEqual(values.withLock { $0 }, Array(0..<1000))
    }

    func testObserveOnDropsWhatIsPendingWhenDisposed() {
        let scheduler = TestScheduler()
        let recorder = TestRecorder<Int>(scheduler)
        Producer.just(1).observe(on: scheduler).start(recorder.observer).dispose()
        scheduler.run()
        XCTAssertEqual(recorder.events, [])
    }

    func testStartOnDefersTheWorkToTheScheduler() {
        let scheduler = TestScheduler()
        let started = Locked(false)
        let producer = Producer<Int> { observer, _ in
            started.withLock { $0 = true }
            observer.send(value: scheduler.now)
        }
        let recorder = TestRecorder<Int>(scheduler)
        producer.start(on: scheduler).start(recorder.observer)
        XCTAssertFalse(started.withLock { $0 })
        scheduler.advance(by: 5)
        XCTAssertEqual(recorder.events, [.value(0, 0)])
    }
}
