import Streams
import StreamsTesting
import XCTest

/// `timeout` with RxSwift's semantics: a deadline from the subscription, reset by each value.
final class TimeoutMarbleTests: XCTestCase {
    func testValuesBeforeTheDeadlinePassThrough() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(150, 0), .value(210, 1), .value(250, 2), .completed(290)])
        let res = scheduler.start { xs.producer.timeout(50, on: scheduler) }
        XCTAssertEqual(res.events, [.value(210, 1), .value(250, 2), .completed(290)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 290)])
        XCTAssertTrue(scheduler.isIdle, "no deadline is left armed after completion")
    }

    func testTheDeadlinePassingFailsAndDisposesTheSource() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(260, 1), .completed(300)])
        let res = scheduler.start { xs.producer.timeout(50, on: scheduler) }
        XCTAssertEqual(res.events, [.failed(250, TimeoutError(ms: 50))])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 250)])
        XCTAssertEqual(String(describing: TimeoutError(ms: 50)), "timed out after 50 ms")
    }

    func testEachValueResetsTheDeadline() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(240, 1), .value(280, 2), .value(320, 3), .value(400, 4)])
        let res = scheduler.start { xs.producer.timeout(50, on: scheduler) }
        XCTAssertEqual(
            res.events, [.value(240, 1), .value(280, 2), .value(320, 3), .failed(370, TimeoutError(ms: 50))],
            "each gap is under 50 ms, the whole is not; the gap after 320 is 80 ms")
        XCTAssertEqual(xs.subscriptions, [Sub(200, 370)])
    }

    func testCompletionBeforeTheDeadlinePassesThrough() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([Recorded<Int>.completed(230)])
        let res = scheduler.start { xs.producer.timeout(50, on: scheduler) }
        XCTAssertEqual(res.events, [.completed(230)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 230)])
        XCTAssertTrue(scheduler.isIdle)
    }

    func testFailureBeforeTheDeadlinePassesThrough() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1), .failed(240, testError)])
        let res = scheduler.start { xs.producer.timeout(50, on: scheduler) }
        XCTAssertEqual(res.events, [.value(210, 1), .failed(240, testError)])
        XCTAssertTrue(scheduler.isIdle)
    }

    func testTheDeadlineSwitchesToOther() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1), .value(300, 2), .completed(400)])
        let ys = scheduler.createColdProducer([.value(10, 9), .completed(20)])
        let res = scheduler.start { xs.producer.timeout(50, other: ys.producer, on: scheduler) }
        XCTAssertEqual(res.events, [.value(210, 1), .value(270, 9), .completed(280)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 260)], "the source is disposed at the deadline")
        XCTAssertEqual(ys.subscriptions, [Sub(260, 280)])
    }

    func testOtherIsNotStartedWhenTheSourceIsInTime() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1), .completed(240)])
        let ys = scheduler.createColdProducer([.value(10, 9), .completed(20)])
        let res = scheduler.start { xs.producer.timeout(50, other: ys.producer, on: scheduler) }
        XCTAssertEqual(res.events, [.value(210, 1), .completed(240)])
        XCTAssertEqual(ys.subscriptions, [])
    }

    func testDisposeCancelsThePendingDeadline() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1)])
        let res = scheduler.start(disposed: 230) { xs.producer.timeout(50, on: scheduler) }
        XCTAssertEqual(scheduler.pendingCount, 0, "the deadline armed at 210 for 260 is cancelled at 230")
        scheduler.advance(to: 2000)
        XCTAssertEqual(res.events, [.value(210, 1)], "a disposed stream never fails")
    }

    func testAHugeDeadlineNeverPasses() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1), .value(900, 2)])
        let res = scheduler.start { xs.producer.timeout(.max, on: scheduler) }
        XCTAssertEqual(res.events, [.value(210, 1), .value(900, 2)])
        XCTAssertEqual(scheduler.pendingCount, 0)
    }
}
