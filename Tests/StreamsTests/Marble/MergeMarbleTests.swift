import Streams
import StreamsTesting
import XCTest

/// Cases ported from RxSwift's merge marble tests: flatMap(.merge) over a producer of producers,
/// and merge(maxConcurrent:) as `.concurrent(limit:)`.
final class MergeMarbleTests: XCTestCase {
    func testData() {
        let scheduler = TestScheduler()
        let ys1 = scheduler.createColdProducer([
            .value(10, 101), .value(20, 102), .value(110, 103), .value(120, 104), .value(210, 105), .value(220, 106),
            .completed(230),
        ])
        let ys2 = scheduler.createColdProducer([
            .value(10, 201), .value(20, 202), .value(30, 203), .value(40, 204), .completed(50),
        ])
        let ys3 = scheduler.createColdProducer([
            .value(10, 301), .value(20, 302), .value(30, 303), .value(40, 304), .value(120, 305), .completed(150),
        ])
        let xs = scheduler.createHotProducer([
            .value(300, ys1.producer), .value(400, ys2.producer), .value(500, ys3.producer), .completed(600),
        ])
        let res = scheduler.start { xs.producer.flatten(.merge) }
        XCTAssertEqual(
            res.events,
            [
                .value(310, 101), .value(320, 102), .value(410, 103), .value(410, 201), .value(420, 104),
                .value(420, 202),
                .value(430, 203), .value(440, 204), .value(510, 105), .value(510, 301), .value(520, 106),
                .value(520, 302),
                .value(530, 303), .value(540, 304), .value(620, 305), .completed(650),
            ])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 600)])
        XCTAssertEqual(ys1.subscriptions, [Sub(300, 530)])
        XCTAssertEqual(ys2.subscriptions, [Sub(400, 450)])
        XCTAssertEqual(ys3.subscriptions, [Sub(500, 650)])
    }

    func testDataNotOverlapped() {
        let scheduler = TestScheduler()
        let ys1 = scheduler.createColdProducer([.value(10, 101), .value(20, 102), .completed(230)])
        let ys2 = scheduler.createColdProducer([
            .value(10, 201), .value(20, 202), .value(30, 203), .value(40, 204), .completed(50),
        ])
        let ys3 = scheduler.createColdProducer([
            .value(10, 301), .value(20, 302), .value(30, 303), .value(40, 304), .completed(50),
        ])
        let xs = scheduler.createHotProducer([
            .value(300, ys1.producer), .value(400, ys2.producer), .value(500, ys3.producer), .completed(600),
        ])
        let res = scheduler.start { xs.producer.flatMap(.merge) { $0 } }
        XCTAssertEqual(
            res.events,
            [
                .value(310, 101), .value(320, 102), .value(410, 201), .value(420, 202), .value(430, 203),
                .value(440, 204),
                .value(510, 301), .value(520, 302), .value(530, 303), .value(540, 304), .completed(600),
            ])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 600)])
        XCTAssertEqual(ys1.subscriptions, [Sub(300, 530)])
        XCTAssertEqual(ys2.subscriptions, [Sub(400, 450)])
        XCTAssertEqual(ys3.subscriptions, [Sub(500, 550)])
    }

    func testInnerThrows() {
        let scheduler = TestScheduler()
        let ys1 = scheduler.createColdProducer([
            .value(10, 101), .value(20, 102), .value(110, 103), .value(120, 104), .value(210, 105), .value(220, 106),
            .completed(230),
        ])
        let ys2 = scheduler.createColdProducer([
            .value(10, 201), .value(20, 202), .value(30, 203), .value(40, 204), .failed(50, testError1),
        ])
        let ys3 = scheduler.createColdProducer([
            .value(10, 301), .value(20, 302), .value(30, 303), .value(40, 304), .completed(150),
        ])
        let xs = scheduler.createHotProducer([
            .value(300, ys1.producer), .value(400, ys2.producer), .value(500, ys3.producer), .completed(600),
        ])
        let res = scheduler.start { xs.producer.flatten(.merge) }
        XCTAssertEqual(
            res.events,
            [
                .value(310, 101), .value(320, 102), .value(410, 103), .value(410, 201), .value(420, 104),
                .value(420, 202),
                .value(430, 203), .value(440, 204), .failed(450, testError1),
            ])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 450)])
        XCTAssertEqual(ys1.subscriptions, [Sub(300, 450)])
        XCTAssertEqual(ys2.subscriptions, [Sub(400, 450)])
        XCTAssertEqual(ys3.subscriptions, [])
    }

    func testOuterThrows() {
        let scheduler = TestScheduler()
        let ys1 = scheduler.createColdProducer([
            .value(10, 101), .value(20, 102), .value(110, 103), .value(120, 104), .value(210, 105), .value(220, 106),
            .completed(230),
        ])
        let ys2 = scheduler.createColdProducer([
            .value(10, 201), .value(20, 202), .value(30, 203), .value(40, 204), .completed(50),
        ])
        let xs = scheduler.createHotProducer([
            .value(300, ys1.producer), .value(400, ys2.producer), .failed(500, testError1),
        ])
        let res = scheduler.start { xs.producer.flatten(.merge) }
        XCTAssertEqual(
            res.events,
            [
                .value(310, 101), .value(320, 102), .value(410, 103), .value(410, 201), .value(420, 104),
                .value(420, 202),
                .value(430, 203), .value(440, 204), .failed(500, testError1),
            ])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 500)])
        XCTAssertEqual(ys1.subscriptions, [Sub(300, 500)])
        XCTAssertEqual(ys2.subscriptions, [Sub(400, 450)])
    }

    private struct ConcurrentCase {
        let ys: [TestableProducer<Int>]
        let xs: TestableProducer<Producer<Int>>
    }

    private func concurrentCase(
        _ scheduler: TestScheduler, ys2End: Int, ys4At: Int, outerEnd: Int
    ) -> ConcurrentCase {
        let ys = [
            scheduler.createColdProducer([.value(50, 1), .value(100, 2), .value(120, 3), .completed(140)]),
            scheduler.createColdProducer([.value(20, 4), .value(70, 5), .completed(ys2End)]),
            scheduler.createColdProducer([.value(10, 6), .value(90, 7), .value(110, 8), .completed(130)]),
            scheduler.createColdProducer([.value(210, 9), .value(240, 10), .completed(300)]),
        ]
        let xs = scheduler.createHotProducer([
            .value(210, ys[0].producer), .value(260, ys[1].producer), .value(270, ys[2].producer),
            .value(ys4At, ys[3].producer), .completed(outerEnd),
        ])
        return ConcurrentCase(ys: ys, xs: xs)
    }

    func testConcurrentLimitTwo() {
        let scheduler = TestScheduler()
        let c = concurrentCase(scheduler, ys2End: 200, ys4At: 320, outerEnd: 400)
        let res = scheduler.start { c.xs.producer.flatten(.concurrent(limit: 2)) }
        XCTAssertEqual(
            res.events,
            [
                .value(260, 1), .value(280, 4), .value(310, 2), .value(330, 3), .value(330, 5), .value(360, 6),
                .value(440, 7), .value(460, 8), .value(670, 9), .value(700, 10), .completed(760),
            ])
        XCTAssertEqual(c.xs.subscriptions, [Sub(200, 400)])
        XCTAssertEqual(c.ys[0].subscriptions, [Sub(210, 350)])
        XCTAssertEqual(c.ys[1].subscriptions, [Sub(260, 460)])
        XCTAssertEqual(c.ys[2].subscriptions, [Sub(350, 480)])
        XCTAssertEqual(c.ys[3].subscriptions, [Sub(460, 760)])
    }

    func testConcurrentLimitTwoLong() {
        let scheduler = TestScheduler()
        let c = concurrentCase(scheduler, ys2End: 300, ys4At: 320, outerEnd: 400)
        let res = scheduler.start { c.xs.producer.flatten(.concurrent(limit: 2)) }
        XCTAssertEqual(
            res.events,
            [
                .value(260, 1), .value(280, 4), .value(310, 2), .value(330, 3), .value(330, 5), .value(360, 6),
                .value(440, 7), .value(460, 8), .value(690, 9), .value(720, 10), .completed(780),
            ])
        XCTAssertEqual(c.xs.subscriptions, [Sub(200, 400)])
        XCTAssertEqual(c.ys[0].subscriptions, [Sub(210, 350)])
        XCTAssertEqual(c.ys[1].subscriptions, [Sub(260, 560)])
        XCTAssertEqual(c.ys[2].subscriptions, [Sub(350, 480)])
        XCTAssertEqual(c.ys[3].subscriptions, [Sub(480, 780)])
    }

    func testConcurrentLimitThree() {
        let scheduler = TestScheduler()
        let c = concurrentCase(scheduler, ys2End: 300, ys4At: 420, outerEnd: 450)
        let res = scheduler.start { c.xs.producer.flatten(.concurrent(limit: 3)) }
        XCTAssertEqual(
            res.events,
            [
                .value(260, 1), .value(280, 4), .value(280, 6), .value(310, 2), .value(330, 3), .value(330, 5),
                .value(360, 7), .value(380, 8), .value(630, 9), .value(660, 10), .completed(720),
            ])
        XCTAssertEqual(c.xs.subscriptions, [Sub(200, 450)])
        XCTAssertEqual(c.ys[0].subscriptions, [Sub(210, 350)])
        XCTAssertEqual(c.ys[1].subscriptions, [Sub(260, 560)])
        XCTAssertEqual(c.ys[2].subscriptions, [Sub(270, 400)])
        XCTAssertEqual(c.ys[3].subscriptions, [Sub(420, 720)])
    }

    func testMergeOfSynchronousProducers() {
        let scheduler = TestScheduler()
        let recorder = TestRecorder<Int>(scheduler)
        Producer.merge([.from([0, 1, 2]), .from([0, 1, 2]), .from([0, 1, 2])]).start(recorder.observer)
        XCTAssertEqual(recorder.values.count, 9)
        XCTAssertEqual(recorder.events.last, .completed(0))
    }

    func testMergeFailsOnceWhenAnInnerFailsAfterValues() {
        let scheduler = TestScheduler()
        let recorder = TestRecorder<Int>(scheduler)
        Producer.merge([.from([0, 1, 2]), .concat([.from([0, 1]), .fail(testError)]), .from([0, 1, 2])])
            .start(recorder.observer)
        XCTAssertEqual(recorder.values, [0, 1, 2, 0, 1])
        XCTAssertEqual(recorder.events.last, .failed(0, testError))
    }

    func testMergeOfNothingCompletes() {
        let scheduler = TestScheduler()
        let recorder = TestRecorder<Int>(scheduler)
        Producer<Int>.merge([]).start(recorder.observer)
        Producer.merge([Producer<Int>.empty()]).start(recorder.observer)
        XCTAssertEqual(recorder.events, [.completed(0), .completed(0)])
    }
}
