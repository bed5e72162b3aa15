import Streams
import StreamsTesting
import XCTest

/// `retry` with RxSwift's semantics, counted in retries: `retry(1)` makes two attempts in all.
final class RetryMarbleTests: XCTestCase {
    /// A cold producer whose attempt `n` sends `n` 10 ms after it starts, then fails with
    /// `TestError(id: n)` 10 ms later, or completes instead from attempt `succeedsOn` on.
    private final class Attempts: Sendable {
        let producer: Producer<Int>
        private let log: Locked<[SubscriptionInterval]>

        var subscriptions: [SubscriptionInterval] { log.withLock { $0 } }

        init(_ scheduler: TestScheduler, succeedsOn: Int = .max) {
            let log = Locked<[SubscriptionInterval]>([])
            self.log = log
            producer = Producer { observer, lifetime in
                let (n, start) = log.withLock { log in
                    log.append(SubscriptionInterval(scheduler.now))
                    return (log.count, scheduler.now)
                }
                lifetime.observeEnded {
                    log.withLock { $0[n - 1] = SubscriptionInterval(start, scheduler.now) }
                }
                lifetime += scheduler.schedule(after: 10) { observer.send(value: n) }
                lifetime += scheduler.schedule(after: 20) {
                    if n >= succeedsOn { observer.sendCompleted() } else { observer.sendFailed(TestError(id: n)) }
                }
            }
        }
    }

    func testRetrySucceedsOnTheSecondAttempt() {
        let scheduler = TestScheduler()
        let xs = Attempts(scheduler, succeedsOn: 2)
        let res = scheduler.start { xs.producer.retry(1) }
        XCTAssertEqual(
            res.events, [.value(210, 1), .value(230, 2), .completed(240)],
            "the value of the failed attempt stays sent")
        XCTAssertEqual(xs.subscriptions, [Sub(200, 220), Sub(220, 240)])
    }

    func testRetryExhaustedPassesTheLastError() {
        let scheduler = TestScheduler()
        let xs = Attempts(scheduler)
        let res = scheduler.start { xs.producer.retry(2) }
        XCTAssertEqual(res.events, [.value(210, 1), .value(230, 2), .value(250, 3), .failed(260, TestError(id: 3))])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 220), Sub(220, 240), Sub(240, 260)])
    }

    func testRetryZeroIsOneAttempt() {
        let scheduler = TestScheduler()
        let xs = Attempts(scheduler)
        let res = scheduler.start { xs.producer.retry(0) }
        XCTAssertEqual(res.events, [.value(210, 1), .failed(220, TestError(id: 1))])
    }

    func testCompletionIsNotRetried() {
        let scheduler = TestScheduler()
        let xs = Attempts(scheduler, succeedsOn: 1)
        let res = scheduler.start { xs.producer.retry(3) }
        XCTAssertEqual(res.events, [.value(210, 1), .completed(220)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 220)])
    }

    func testConstantBackoffWaitsBeforeEachRetry() {
        let scheduler = TestScheduler()
        let xs = Attempts(scheduler)
        let res = scheduler.start { xs.producer.retry(2, backoff: { _ in 100 }, on: scheduler) }
        XCTAssertEqual(res.events, [.value(210, 1), .value(330, 2), .value(450, 3), .failed(460, TestError(id: 3))])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 220), Sub(320, 340), Sub(440, 460)])
    }

    func testBackoffByFunctionOfTheRetryNumber() {
        let scheduler = TestScheduler()
        let xs = Attempts(scheduler, succeedsOn: 3)
        let asked = Locked<[Int]>([])
        let res = scheduler.start {
            xs.producer.retry(
                5,
                backoff: { retry in
                    asked.withLock { $0.append(retry) }
                    return retry * 100
                }, on: scheduler)
        }
        XCTAssertEqual(res.events, [.value(210, 1), .value(330, 2), .value(550, 3), .completed(560)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 220), Sub(320, 340), Sub(540, 560)])
        XCTAssertEqual(asked.withLock { $0 }, [1, 2])
    }

    func testABackoffThatThrowsFailsWithItsError() {
        let scheduler = TestScheduler()
        let xs = Attempts(scheduler)
        let res = scheduler.start { xs.producer.retry(3, backoff: { _ in throw testError2 }, on: scheduler) }
        XCTAssertEqual(res.events, [.value(210, 1), .failed(220, testError2)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 220)])
    }

    func testDisposeCancelsThePendingBackoff() {
        let scheduler = TestScheduler()
        let xs = Attempts(scheduler)
        let res = scheduler.start(disposed: 250) { xs.producer.retry(2, backoff: { _ in 100 }, on: scheduler) }
        XCTAssertEqual(scheduler.pendingCount, 0, "the retry due at 320 is cancelled at 250")
        scheduler.advance(to: 2000)
        XCTAssertEqual(res.events, [.value(210, 1)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 220)], "no attempt starts after disposal")
    }

    func testDisposeStopsTheCurrentAttempt() {
        let scheduler = TestScheduler()
        let xs = Attempts(scheduler)
        let res = scheduler.start(disposed: 235) { xs.producer.retry(5) }
        XCTAssertEqual(res.events, [.value(210, 1), .value(230, 2)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 220), Sub(220, 235)])
        XCTAssertEqual(scheduler.pendingCount, 0)
    }

    func testASourceThatFailsAtOnceIsRetriedWithoutDeepeningTheStack() {
        let attempts = Locked(0)
        let source = Producer<Int> { observer, _ in
            let n = attempts.withLock { n in
                n += 1
                return n
            }
            observer.send(value: n)
            observer.sendFailed(TestError(id: n))
        }
        let values = Locked<[Int]>([])
        let failure = Locked<(any Error)?>(nil)
        source.retry(100_000).start(
            value: { v in values.withLock { $0.append(v) } },
            failed: { e in failure.withLock { $0 = e } })
        XCTAssertEqual(values.withLock { $0.count }, 100_001)
        XCTAssertEqual(failure.withLock { $0 } as? TestError, TestError(id: 100_001))
    }

    func testRetryThenTimeoutAsAPaymentCall() {
        // The call hangs the first time and answers the second: one retry after the timeout.
        let scheduler = TestScheduler()
        let attempts = Locked(0)
        let call = Producer<String> { observer, lifetime in
            let n = attempts.withLock { n in
                n += 1
                return n
            }
            guard n > 1 else { return }
            lifetime += scheduler.schedule(after: 30) {
                observer.send(value: "paid")
                observer.sendCompleted()
            }
        }
        let res = scheduler.start { call.timeout(100, on: scheduler).retry(1, backoff: { _ in 50 }, on: scheduler) }
        XCTAssertEqual(res.events, [.value(380, "paid"), .completed(380)])
        XCTAssertTrue(scheduler.isIdle)
    }
}
