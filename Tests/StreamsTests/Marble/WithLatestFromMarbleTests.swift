import Streams
import StreamsTesting
import XCTest

/// Cases ported from RxSwift's withLatestFrom marble tests (same times, same expectations).
final class WithLatestFromMarbleTests: XCTestCase {
    private func source(_ scheduler: TestScheduler, end: Recorded<Int>) -> TestableProducer<Int> {
        scheduler.createHotProducer([
            .value(90, 1), .value(180, 2), .value(250, 3), .value(260, 4), .value(310, 5), .value(340, 6),
            .value(410, 7), .value(420, 8), .value(470, 9), .value(550, 10), end,
        ])
    }

    func testSimple1() {
        let scheduler = TestScheduler()
        let xs = source(scheduler, end: .completed(590))
        let ys = scheduler.createHotProducer([
            .value(255, "bar"), .value(330, "foo"), .value(350, "qux"), .completed(400),
        ])
        let res = scheduler.start { xs.producer.withLatestFrom(ys.producer) { "\($0)\($1)" } }
        XCTAssertEqual(
            res.events,
            [
                .value(260, "4bar"), .value(310, "5bar"), .value(340, "6foo"), .value(410, "7qux"),
                .value(420, "8qux"), .value(470, "9qux"), .value(550, "10qux"), .completed(590),
            ])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 590)])
        XCTAssertEqual(ys.subscriptions, [Sub(200, 400)])
    }

    func testImmediateValuesFromBothSides() {
        let scheduler = TestScheduler()
        let xs = MutableProperty(3)
        let ys = MutableProperty(5)
        let res = scheduler.start { xs.producer.withLatestFrom(ys.producer) { "\($0)\($1)" }.take(1) }
        XCTAssertEqual(res.events, [.value(200, "35"), .completed(200)])
    }

    func testSimple2() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([
            .value(90, 1), .value(180, 2), .value(250, 3), .value(260, 4), .value(310, 5), .value(340, 6),
            .completed(390),
        ])
        let ys = scheduler.createHotProducer([
            .value(255, "bar"), .value(330, "foo"), .value(350, "qux"), .value(370, "baz"), .completed(400),
        ])
        let res = scheduler.start { xs.producer.withLatestFrom(ys.producer) { "\($0)\($1)" } }
        XCTAssertEqual(res.events, [.value(260, "4bar"), .value(310, "5bar"), .value(340, "6foo"), .completed(390)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 390)])
        XCTAssertEqual(ys.subscriptions, [Sub(200, 390)])
    }

    func testSimple3() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([
            .value(90, 1), .value(180, 2), .value(250, 3), .value(260, 4), .value(310, 5), .value(340, 6),
            .completed(390),
        ])
        let ys = scheduler.createHotProducer([
            .value(245, "bar"), .value(330, "foo"), .value(350, "qux"), .value(370, "baz"), .completed(400),
        ])
        let res = scheduler.start { xs.producer.withLatestFrom(ys.producer) { "\($0)\($1)" } }
        XCTAssertEqual(
            res.events,
            [
                .value(250, "3bar"), .value(260, "4bar"), .value(310, "5bar"), .value(340, "6foo"), .completed(390),
            ])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 390)])
        XCTAssertEqual(ys.subscriptions, [Sub(200, 390)])
    }

    func testSourceFails() {
        let scheduler = TestScheduler()
        let xs = source(scheduler, end: .failed(590, testError))
        let ys = scheduler.createHotProducer([
            .value(255, "bar"), .value(330, "foo"), .value(350, "qux"), .completed(400),
        ])
        let res = scheduler.start { xs.producer.withLatestFrom(ys.producer) { "\($0)\($1)" } }
        XCTAssertEqual(
            res.events,
            [
                .value(260, "4bar"), .value(310, "5bar"), .value(340, "6foo"), .value(410, "7qux"),
                .value(420, "8qux"), .value(470, "9qux"), .value(550, "10qux"), .failed(590, testError),
            ])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 590)])
        XCTAssertEqual(ys.subscriptions, [Sub(200, 400)])
    }

    func testOtherFails() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([
            .value(90, 1), .value(180, 2), .value(250, 3), .value(260, 4), .value(310, 5), .value(340, 6),
            .completed(390),
        ])
        let ys = scheduler.createHotProducer([
            .value(255, "bar"), .value(330, "foo"), .value(350, "qux"), .failed(370, testError),
        ])
        let res = scheduler.start { xs.producer.withLatestFrom(ys.producer) { "\($0)\($1)" } }
        XCTAssertEqual(
            res.events, [.value(260, "4bar"), .value(310, "5bar"), .value(340, "6foo"), .failed(370, testError)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 370)])
        XCTAssertEqual(ys.subscriptions, [Sub(200, 370)])
    }

    func testCombineThrows() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([
            .value(90, 1), .value(180, 2), .value(250, 3), .value(260, 4), .value(310, 5), .value(340, 6),
            .completed(390),
        ])
        let ys = scheduler.createHotProducer([
            .value(255, "bar"), .value(330, "foo"), .value(350, "qux"), .completed(400),
        ])
        let res = scheduler.start {
            xs.producer.withLatestFrom(ys.producer) { x, y throws -> String in
                if x == 5 { throw testError }
                return "\(x)\(y)"
            }
        }
        XCTAssertEqual(res.events, [.value(260, "4bar"), .failed(310, testError)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 310)])
        XCTAssertEqual(ys.subscriptions, [Sub(200, 310)])
    }

    func testWithoutCombineTakesTheOthersValues() {
        let scheduler = TestScheduler()
        let xs = source(scheduler, end: .completed(590))
        let ys = scheduler.createHotProducer([
            .value(255, "bar"), .value(330, "foo"), .value(350, "qux"), .completed(400),
        ])
        let res = scheduler.start { xs.producer.withLatestFrom(ys.producer) }
        XCTAssertEqual(
            res.events,
            [
                .value(260, "bar"), .value(310, "bar"), .value(340, "foo"), .value(410, "qux"),
                .value(420, "qux"), .value(470, "qux"), .value(550, "qux"), .completed(590),
            ])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 590)])
        XCTAssertEqual(ys.subscriptions, [Sub(200, 400)])
    }
}
