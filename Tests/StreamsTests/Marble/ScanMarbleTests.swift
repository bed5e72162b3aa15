import Streams
import StreamsTesting
import XCTest

/// Cases ported from RxSwift's scan marble tests.
final class ScanMarbleTests: XCTestCase {
    let seed = 42

    func testNever() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(0, 0)])
        let res = scheduler.start { xs.producer.scan(self.seed, +) }
        XCTAssertEqual(res.events, [])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 1000)])
    }

    func testEmptyDoesNotEmitTheSeed() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(150, 1), .completed(250)])
        let res = scheduler.start { xs.producer.scan(self.seed, +) }
        XCTAssertEqual(res.events, [.completed(250)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 250)])
    }

    func testReturn() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(150, 1), .value(220, 2), .completed(250)])
        let res = scheduler.start { xs.producer.scan(self.seed, +) }
        XCTAssertEqual(res.events, [.value(220, seed + 2), .completed(250)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 250)])
    }

    func testThrow() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(150, 1), .failed(250, testError)])
        let res = scheduler.start { xs.producer.scan(self.seed, +) }
        XCTAssertEqual(res.events, [.failed(250, testError)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 250)])
    }

    func testSomeData() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([
            .value(150, 1), .value(210, 2), .value(220, 3), .value(230, 4), .value(240, 5), .completed(250),
        ])
        let res = scheduler.start { xs.producer.scan(self.seed, +) }
        XCTAssertEqual(
            res.events,
            [
                .value(210, seed + 2), .value(220, seed + 2 + 3), .value(230, seed + 2 + 3 + 4),
                .value(240, seed + 2 + 3 + 4 + 5), .completed(250),
            ])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 250)])
    }

    func testAccumulatorThrows() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([
            .value(150, 1), .value(210, 2), .value(220, 3), .value(230, 4), .value(240, 5), .completed(250),
        ])
        let res = scheduler.start {
            xs.producer.scan(self.seed) { sum, value in
                if value == 4 { throw testError }
                return sum + value
            }
        }
        XCTAssertEqual(res.events, [.value(210, seed + 2), .value(220, seed + 2 + 3), .failed(230, testError)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 230)])
    }
}
