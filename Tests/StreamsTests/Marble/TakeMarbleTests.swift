import Streams
import StreamsTesting
import XCTest

/// Cases ported from RxSwift's take(count) marble tests.
final class TakeMarbleTests: XCTestCase {
    private let times = [
        (70, 6), (150, 4), (210, 9), (230, 13), (270, 7), (280, 1), (300, -1), (310, 3), (340, 8), (370, 11),
        (410, 15), (415, 16), (460, 72), (510, 76), (560, 32), (570, -100), (580, -3), (590, 5), (630, 10),
    ]

    private func source(_ scheduler: TestScheduler, end: Recorded<Int>) -> TestableProducer<Int> {
        scheduler.createHotProducer(times.map { Recorded.value($0.0, $0.1) } + [end])
    }

    /// The values the subscription at 200 sees, in order, up to `count` of them.
    private func expected(_ count: Int) -> [Recorded<Int>] {
        Array(times.filter { $0.0 > 200 }.prefix(count).map { Recorded.value($0.0, $0.1) })
    }

    func testCompleteAfter() {
        let scheduler = TestScheduler()
        let xs = source(scheduler, end: .completed(690))
        let res = scheduler.start { xs.producer.take(20) }
        XCTAssertEqual(res.events, expected(17) + [.completed(690)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 690)])
    }

    func testCompleteSame() {
        let scheduler = TestScheduler()
        let xs = source(scheduler, end: .completed(690))
        let res = scheduler.start { xs.producer.take(17) }
        XCTAssertEqual(res.events, expected(17) + [.completed(630)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 630)])
    }

    func testCompleteBefore() {
        let scheduler = TestScheduler()
        let xs = source(scheduler, end: .completed(690))
        let res = scheduler.start { xs.producer.take(10) }
        XCTAssertEqual(res.events, expected(10) + [.completed(415)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 415)])
    }

    func testErrorAfter() {
        let scheduler = TestScheduler()
        let xs = source(scheduler, end: .failed(690, testError))
        let res = scheduler.start { xs.producer.take(20) }
        XCTAssertEqual(res.events, expected(17) + [.failed(690, testError)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 690)])
    }

    func testErrorSame() {
        let scheduler = TestScheduler()
        let xs = source(scheduler, end: .failed(690, testError))
        let res = scheduler.start { xs.producer.take(17) }
        XCTAssertEqual(res.events, expected(17) + [.completed(630)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 630)])
    }

    func testErrorBefore() {
        let scheduler = TestScheduler()
        let xs = source(scheduler, end: .failed(690, testError))
        let res = scheduler.start { xs.producer.take(3) }
        XCTAssertEqual(res.events, expected(3) + [.completed(270)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 270)])
    }

    func testDisposeBefore() {
        let scheduler = TestScheduler()
        let xs = source(scheduler, end: .failed(690, testError))
        let res = scheduler.start(disposed: 250) { xs.producer.take(3) }
        XCTAssertEqual(res.events, [.value(210, 9), .value(230, 13)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 250)])
    }

    func testDisposeAfter() {
        let scheduler = TestScheduler()
        let xs = source(scheduler, end: .failed(690, testError))
        let res = scheduler.start(disposed: 400) { xs.producer.take(3) }
        XCTAssertEqual(res.events, expected(3) + [.completed(270)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 270)])
    }

    func testZeroCompletesWithoutSubscribing() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(70, 6), .value(150, 4), .value(210, 9), .value(230, 13)])
        let res = scheduler.start { xs.producer.take(0) }
        XCTAssertEqual(res.events, [.completed(200)])
        XCTAssertEqual(xs.subscriptions, [])
    }

    func testCountsBeforeSendingSoReentrantValuesAreCounted() {
        let property = MutableProperty(false)
        let seen = Locked<[Bool]>([])
        property.producer.take(1).start(value: { value in
            seen.withLock { $0.append(value) }
            property.value = !value
        })
        XCTAssertEqual(seen.withLock { $0 }, [false])
        XCTAssertTrue(property.value)
    }
}
