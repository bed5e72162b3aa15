import Streams
import StreamsTesting
import XCTest

/// Cases ported from RxSwift's switchLatest / flatMapLatest marble tests.
final class FlatMapLatestMarbleTests: XCTestCase {
    private func inners(
        _ scheduler: TestScheduler, secondEnd: Recorded<Int> = .completed(50)
    ) -> [TestableProducer<Int>] {
        [
            scheduler.createColdProducer([
                .value(10, 101), .value(20, 102), .value(110, 103), .value(120, 104), .value(210, 105),
                .value(220, 106), .completed(230),
            ]),
            scheduler.createColdProducer([
                .value(10, 201), .value(20, 202), .value(30, 203), .value(40, 204), secondEnd,
            ]),
            scheduler.createColdProducer([
                .value(10, 301), .value(20, 302), .value(30, 303), .value(40, 304), .completed(150),
            ]),
        ]
    }

    func testData() {
        let scheduler = TestScheduler()
        let ys = inners(scheduler)
        let xs = scheduler.createHotProducer([.value(300, 0), .value(400, 1), .value(500, 2), .completed(600)])
        let res = scheduler.start { xs.producer.flatMapLatest { ys[$0].producer } }
        XCTAssertEqual(
            res.events,
            [
                .value(310, 101), .value(320, 102), .value(410, 201), .value(420, 202), .value(430, 203),
                .value(440, 204), .value(510, 301), .value(520, 302), .value(530, 303), .value(540, 304),
                .completed(650),
            ])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 600)])
        XCTAssertEqual(ys[0].subscriptions, [Sub(300, 400)])
        XCTAssertEqual(ys[1].subscriptions, [Sub(400, 450)])
        XCTAssertEqual(ys[2].subscriptions, [Sub(500, 650)])
    }

    func testInnerThrows() {
        let scheduler = TestScheduler()
        let ys = inners(scheduler, secondEnd: .failed(50, testError))
        let xs = scheduler.createHotProducer([.value(300, 0), .value(400, 1), .value(500, 2), .completed(600)])
        let res = scheduler.start { xs.producer.flatMap(.latest) { ys[$0].producer } }
        XCTAssertEqual(
            res.events,
            [
                .value(310, 101), .value(320, 102), .value(410, 201), .value(420, 202), .value(430, 203),
                .value(440, 204), .failed(450, testError),
            ])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 450)])
        XCTAssertEqual(ys[0].subscriptions, [Sub(300, 400)])
        XCTAssertEqual(ys[1].subscriptions, [Sub(400, 450)])
        XCTAssertEqual(ys[2].subscriptions, [])
    }

    func testOuterThrows() {
        let scheduler = TestScheduler()
        let ys = inners(scheduler)
        let xs = scheduler.createHotProducer([.value(300, 0), .value(400, 1), .failed(500, testError)])
        let res = scheduler.start { xs.producer.flatMapLatest { ys[$0].producer } }
        XCTAssertEqual(
            res.events,
            [
                .value(310, 101), .value(320, 102), .value(410, 201), .value(420, 202), .value(430, 203),
                .value(440, 204), .failed(500, testError),
            ])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 500)])
        XCTAssertEqual(ys[0].subscriptions, [Sub(300, 400)])
        XCTAssertEqual(ys[1].subscriptions, [Sub(400, 450)])
    }

    func testSelectorThrows() {
        let scheduler = TestScheduler()
        let ys = inners(scheduler)
        let xs = scheduler.createHotProducer([.value(300, 0), .value(400, 1)])
        let res = scheduler.start {
            xs.producer.flatMapLatest { x -> Producer<Int> in
                if x < 1 { return ys[x].producer }
                throw testError
            }
        }
        XCTAssertEqual(res.events, [.value(310, 101), .value(320, 102), .failed(400, testError)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 400)])
        XCTAssertEqual(ys[0].subscriptions, [Sub(300, 400)])
        XCTAssertEqual(ys[1].subscriptions, [])
    }

    func testSwitchingAProducerOfProducers() {
        let scheduler = TestScheduler()
        let ys = inners(scheduler)
        let xs = scheduler.createHotProducer([
            .value(300, ys[0].producer), .value(400, ys[1].producer), .value(500, ys[2].producer), .completed(600),
        ])
        let res = scheduler.start { xs.producer.flatten(.latest) }
        XCTAssertEqual(res.values, [101, 102, 201, 202, 203, 204, 301, 302, 303, 304])
        XCTAssertEqual(res.events.last, .completed(650))
    }
}
