import Streams
import StreamsTesting
import XCTest

/// Cases ported from RxSwift's throttle marble tests, with and without `latest`.
final class ThrottleMarbleTests: XCTestCase {
    private func values(_ scheduler: TestScheduler, end: Recorded<Int>?) -> TestableProducer<Int> {
        var events: [Recorded<Int>] = [
            .value(150, 1), .value(210, 2), .value(250, 3), .value(310, 4), .value(350, 5), .value(410, 6),
            .value(450, 7),
        ]
        if let end { events.append(end) }
        return scheduler.createHotProducer(events)
    }

    func testNotLatestCompleted() {
        let scheduler = TestScheduler()
        let xs = values(scheduler, end: .completed(500))
        let res = scheduler.start { xs.producer.throttle(200, latest: false, on: scheduler) }
        XCTAssertEqual(res.events, [.value(210, 2), .value(410, 6), .completed(500)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 500)])
    }

    func testNotLatestNever() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(150, 0)])
        let res = scheduler.start { xs.producer.throttle(200, latest: false, on: scheduler) }
        XCTAssertEqual(res.events, [])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 1000)])
    }

    func testNotLatestEmpty() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(150, 0), .completed(500)])
        let res = scheduler.start { xs.producer.throttle(200, latest: false, on: scheduler) }
        XCTAssertEqual(res.events, [.completed(500)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 500)])
    }

    func testNotLatestError() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([
            .value(150, 1), .value(210, 2), .value(250, 3), .value(310, 4), .value(350, 5), .failed(410, testError),
            .value(450, 7), .completed(500),
        ])
        let res = scheduler.start { xs.producer.throttle(200, latest: false, on: scheduler) }
        XCTAssertEqual(res.events, [.value(210, 2), .failed(410, testError)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 410)])
    }

    func testNotLatestNoEnd() {
        let scheduler = TestScheduler()
        let xs = values(scheduler, end: nil)
        let res = scheduler.start { xs.producer.throttle(200, latest: false, on: scheduler) }
        XCTAssertEqual(res.events, [.value(210, 2), .value(410, 6)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 1000)])
    }

    func testLatestCompletedWaitsForTheHeldValue() {
        let scheduler = TestScheduler()
        let xs = values(scheduler, end: .completed(500))
        let res = scheduler.start { xs.producer.throttle(200, on: scheduler) }
        XCTAssertEqual(res.events, [.value(210, 2), .value(410, 6), .value(610, 7), .completed(610)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 500)])
    }

    func testLatestCompletedAfterDueTime() {
        let scheduler = TestScheduler()
        let xs = values(scheduler, end: .completed(900))
        let res = scheduler.start { xs.producer.throttle(200, on: scheduler) }
        XCTAssertEqual(res.events, [.value(210, 2), .value(410, 6), .value(610, 7), .completed(900)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 900)])
    }

    func testLatestNever() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(150, 0)])
        let res = scheduler.start { xs.producer.throttle(200, on: scheduler) }
        XCTAssertEqual(res.events, [])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 1000)])
    }

    func testLatestEmpty() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(150, 0), .completed(500)])
        let res = scheduler.start { xs.producer.throttle(200, on: scheduler) }
        XCTAssertEqual(res.events, [.completed(500)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 500)])
    }

    func testLatestError() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([
            .value(150, 1), .value(210, 2), .value(250, 3), .value(310, 4), .value(350, 5), .failed(410, testError),
            .value(450, 7), .completed(500),
        ])
        let res = scheduler.start { xs.producer.throttle(200, on: scheduler) }
        XCTAssertEqual(res.events, [.value(210, 2), .failed(410, testError)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 410)])
    }

    func testLatestNoEnd() {
        let scheduler = TestScheduler()
        let xs = values(scheduler, end: nil)
        let res = scheduler.start { xs.producer.throttle(200, on: scheduler) }
        XCTAssertEqual(res.events, [.value(210, 2), .value(410, 6), .value(610, 7)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 1000)])
    }
}
