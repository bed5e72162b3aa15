import Streams
import StreamsTesting
import XCTest

/// Cases ported from RxSwift's concat marble tests.
final class ConcatMarbleTests: XCTestCase {
    func testColdSourcesRunOneAfterAnother() {
        let scheduler = TestScheduler()
        let xs1 = scheduler.createColdProducer([.value(10, 1), .value(20, 2), .value(30, 3), .completed(40)])
        let xs2 = scheduler.createColdProducer([.value(10, 4), .value(20, 5), .completed(30)])
        let xs3 = scheduler.createColdProducer([
            .value(10, 6), .value(20, 7), .value(30, 8), .value(40, 9), .completed(50),
        ])
        let res = scheduler.start { Producer.concat([xs1.producer, xs2.producer, xs3.producer]) }
        XCTAssertEqual(
            res.events,
            [
                .value(210, 1), .value(220, 2), .value(230, 3), .value(250, 4), .value(260, 5), .value(280, 6),
                .value(290, 7), .value(300, 8), .value(310, 9), .completed(320),
            ])
        XCTAssertEqual(xs1.subscriptions, [Sub(200, 240)])
        XCTAssertEqual(xs2.subscriptions, [Sub(240, 270)])
        XCTAssertEqual(xs3.subscriptions, [Sub(270, 320)])
    }

    func testEmptyEmpty() {
        let scheduler = TestScheduler()
        let xs1 = scheduler.createHotProducer([.value(150, 1), .completed(230)])
        let xs2 = scheduler.createHotProducer([.value(150, 1), .completed(250)])
        let res = scheduler.start { Producer.concat([xs1.producer, xs2.producer]) }
        XCTAssertEqual(res.events, [.completed(250)])
        XCTAssertEqual(xs1.subscriptions, [Sub(200, 230)])
        XCTAssertEqual(xs2.subscriptions, [Sub(230, 250)])
    }

    func testEmptyNever() {
        let scheduler = TestScheduler()
        let xs1 = scheduler.createHotProducer([.value(150, 1), .completed(230)])
        let xs2 = scheduler.createHotProducer([.value(150, 1)])
        let res = scheduler.start { Producer.concat([xs1.producer, xs2.producer]) }
        XCTAssertEqual(res.events, [])
        XCTAssertEqual(xs1.subscriptions, [Sub(200, 230)])
        XCTAssertEqual(xs2.subscriptions, [Sub(230, 1000)])
    }

    func testNeverNever() {
        let scheduler = TestScheduler()
        let xs1 = scheduler.createHotProducer([.value(150, 1)])
        let xs2 = scheduler.createHotProducer([.value(150, 1)])
        let res = scheduler.start { Producer.concat([xs1.producer, xs2.producer]) }
        XCTAssertEqual(res.events, [])
        XCTAssertEqual(xs1.subscriptions, [Sub(200, 1000)])
        XCTAssertEqual(xs2.subscriptions, [])
    }

    func testEmptyThrow() {
        let scheduler = TestScheduler()
        let xs1 = scheduler.createHotProducer([.value(150, 1), .completed(230)])
        let xs2 = scheduler.createHotProducer([.value(150, 1), .failed(250, testError)])
        let res = scheduler.start { Producer.concat([xs1.producer, xs2.producer]) }
        XCTAssertEqual(res.events, [.failed(250, testError)])
        XCTAssertEqual(xs1.subscriptions, [Sub(200, 230)])
        XCTAssertEqual(xs2.subscriptions, [Sub(230, 250)])
    }

    func testThrowThrowStopsAtTheFirst() {
        let scheduler = TestScheduler()
        let xs1 = scheduler.createHotProducer([.value(150, 1), .failed(230, testError1)])
        let xs2 = scheduler.createHotProducer([.value(150, 1), .failed(250, testError2)])
        let res = scheduler.start { Producer.concat([xs1.producer, xs2.producer]) }
        XCTAssertEqual(res.events, [.failed(230, testError1)])
        XCTAssertEqual(xs1.subscriptions, [Sub(200, 230)])
        XCTAssertEqual(xs2.subscriptions, [])
    }

    func testReturnNever() {
        let scheduler = TestScheduler()
        let xs1 = scheduler.createHotProducer([.value(150, 1), .value(210, 2), .completed(230)])
        let xs2 = scheduler.createHotProducer([.value(150, 1)])
        let res = scheduler.start { xs1.producer.concat(xs2.producer) }
        XCTAssertEqual(res.events, [.value(210, 2)])
        XCTAssertEqual(xs1.subscriptions, [Sub(200, 230)])
        XCTAssertEqual(xs2.subscriptions, [Sub(230, 1000)])
    }

    func testSomeDataSomeData() {
        let scheduler = TestScheduler()
        let xs1 = scheduler.createHotProducer([.value(150, 1), .value(210, 2), .value(220, 3), .completed(225)])
        let xs2 = scheduler.createHotProducer([.value(150, 1), .value(230, 4), .value(240, 5), .completed(250)])
        let res = scheduler.start { Producer.concat([xs1.producer, xs2.producer]) }
        XCTAssertEqual(res.events, [.value(210, 2), .value(220, 3), .value(230, 4), .value(240, 5), .completed(250)])
        XCTAssertEqual(xs1.subscriptions, [Sub(200, 225)])
        XCTAssertEqual(xs2.subscriptions, [Sub(225, 250)])
    }

    func testMixedHotAndColdTiming() {
        let scheduler = TestScheduler()
        let xs1 = scheduler.createHotProducer([.value(150, 1), .value(210, 2), .value(220, 3), .completed(230)])
        let xs2 = scheduler.createColdProducer([.value(50, 4), .value(60, 5), .value(70, 6), .completed(80)])
        let xs3 = scheduler.createHotProducer([
            .value(150, 1), .value(200, 2), .value(210, 3), .value(220, 4), .value(230, 5), .value(270, 6),
            .value(320, 7), .value(330, 8), .completed(340),
        ])
        let res = scheduler.start { Producer.concat([xs1.producer, xs2.producer, xs3.producer, xs2.producer]) }
        XCTAssertEqual(
            res.events,
            [
                .value(210, 2), .value(220, 3), .value(280, 4), .value(290, 5), .value(300, 6), .value(320, 7),
                .value(330, 8), .value(390, 4), .value(400, 5), .value(410, 6), .completed(420),
            ])
        XCTAssertEqual(xs1.subscriptions, [Sub(200, 230)])
        XCTAssertEqual(xs2.subscriptions, [Sub(230, 310), Sub(340, 420)])
        XCTAssertEqual(xs3.subscriptions, [Sub(310, 340)])
    }

    func testConcatOfSynchronousProducersSums() {
        let sum = Locked(0)
        Producer.concat([.just(1), .just(2), .just(3)]).start(value: { value in sum.withLock { $0 += value } })
        XCTAssertEqual(sum.withLock { $0 }, 6)
    }

    func testLongConcatOfSynchronousProducersDoesNotGrowTheStack() {
        let count = Locked(0)
        Producer.concat(Array(repeating: Producer.just(1), count: 50_000)).start(value: { _ in
            count.withLock { $0 += 1 }
        })
        XCTAssertEqual(count.withLock { $0 }, 50_000)
    }

    func testConcatMapRunsInnersInOrder() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 30), .value(220, 10), .completed(230)])
        let res = scheduler.start { xs.producer.concatMap { delay in Producer.timer(delay, delay, on: scheduler) } }
        XCTAssertEqual(res.events, [.value(240, 30), .value(250, 10), .completed(250)])
    }
}
