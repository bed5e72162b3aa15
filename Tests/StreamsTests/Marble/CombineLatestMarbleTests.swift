import Streams
import StreamsTesting
import XCTest

/// Cases ported from RxSwift's combineLatest marble tests; each runs through both the tuple
/// form and the array form.
final class CombineLatestMarbleTests: XCTestCase {
    private typealias Factory = (TestableProducer<Int>, TestableProducer<Int>) -> Producer<Int>

    private let factories: [Factory] = [
        { e0, e1 in Producer.combineLatest(e0.producer, e1.producer).map { $0 + $1 } },
        { e0, e1 in Producer.combineLatest([e0.producer, e1.producer]).map { $0.reduce(0, +) } },
    ]

    private func check(
        _ first: [Recorded<Int>], _ second: [Recorded<Int>],
        events: [Recorded<Int>], firstSubscriptions: [Sub], secondSubscriptions: [Sub],
        file: StaticString = #filePath, line: UInt = #line
    ) {
        for factory in factories {
            let scheduler = TestScheduler()
            let e0 = scheduler.createHotProducer(first)
            let e1 = scheduler.createHotProducer(second)
            let res = scheduler.start { factory(e0, e1) }
            XCTAssertEqual(res.events, events, file: file, line: line)
            XCTAssertEqual(e0.subscriptions, firstSubscriptions, file: file, line: line)
            XCTAssertEqual(e1.subscriptions, secondSubscriptions, file: file, line: line)
        }
    }

    func testNeverEmpty() {
        check(
            [.value(150, 1)], [.value(150, 1), .completed(210)],
            events: [], firstSubscriptions: [Sub(200, 1000)], secondSubscriptions: [Sub(200, 210)])
    }

    func testEmptyReturnCompletesWhenNothingCanBeEmitted() {
        check(
            [.value(150, 1), .completed(210)], [.value(150, 1), .value(215, 2), .completed(220)],
            events: [.completed(215)], firstSubscriptions: [Sub(200, 210)], secondSubscriptions: [Sub(200, 215)])
    }

    func testReturnEmpty() {
        check(
            [.value(150, 1), .value(215, 2), .completed(220)], [.value(150, 1), .completed(210)],
            events: [.completed(215)], firstSubscriptions: [Sub(200, 215)], secondSubscriptions: [Sub(200, 210)])
    }

    func testNeverReturn() {
        check(
            [.value(150, 1), .value(215, 2), .completed(220)], [.value(150, 1)],
            events: [], firstSubscriptions: [Sub(200, 220)], secondSubscriptions: [Sub(200, 1000)])
    }

    func testReturnReturn1() {
        check(
            [.value(150, 1), .value(215, 2), .completed(230)], [.value(150, 1), .value(220, 3), .completed(240)],
            events: [.value(220, 2 + 3), .completed(240)],
            firstSubscriptions: [Sub(200, 230)], secondSubscriptions: [Sub(200, 240)])
    }

    func testReturnReturn2() {
        check(
            [.value(150, 1), .value(220, 3), .completed(240)], [.value(150, 1), .value(215, 2), .completed(230)],
            events: [.value(220, 2 + 3), .completed(240)],
            firstSubscriptions: [Sub(200, 240)], secondSubscriptions: [Sub(200, 230)])
    }

    func testEmptyError() {
        check(
            [.value(150, 1), .completed(230)], [.value(150, 1), .failed(220, testError)],
            events: [.failed(220, testError)], firstSubscriptions: [Sub(200, 220)], secondSubscriptions: [Sub(200, 220)]
        )
    }

    func testReturnThrow() {
        check(
            [.value(150, 1), .value(210, 2), .completed(230)], [.value(150, 1), .failed(220, testError)],
            events: [.failed(220, testError)], firstSubscriptions: [Sub(200, 220)], secondSubscriptions: [Sub(200, 220)]
        )
    }

    func testThrowThrowTakesTheFirstError() {
        check(
            [.value(150, 1), .failed(220, testError1)], [.value(150, 1), .failed(230, testError2)],
            events: [.failed(220, testError1)], firstSubscriptions: [Sub(200, 220)],
            secondSubscriptions: [Sub(200, 220)])
        check(
            [.value(150, 1), .failed(230, testError1)], [.value(150, 1), .failed(220, testError2)],
            events: [.failed(220, testError2)], firstSubscriptions: [Sub(200, 220)],
            secondSubscriptions: [Sub(200, 220)])
    }

    func testInterleavedValues() {
        check(
            [.value(150, 1), .value(215, 2), .value(225, 4), .completed(230)],
            [.value(150, 1), .value(220, 3), .value(230, 5), .completed(240)],
            events: [.value(220, 2 + 3), .value(225, 4 + 3), .value(230, 4 + 5), .completed(240)],
            firstSubscriptions: [Sub(200, 230)], secondSubscriptions: [Sub(200, 240)])
    }

    func testArrayFormKeepsSourceOrderAndEmptyArrayCompletes() {
        let scheduler = TestScheduler()
        let a = scheduler.createHotProducer([.value(210, "a1"), .value(240, "a2")])
        let b = scheduler.createHotProducer([.value(220, "b1")])
        let c = scheduler.createHotProducer([.value(230, "c1"), .completed(250)])
        let res = scheduler.start { Producer.combineLatest([a.producer, b.producer, c.producer]) }
        XCTAssertEqual(res.events, [.value(230, ["a1", "b1", "c1"]), .value(240, ["a2", "b1", "c1"])])
        XCTAssertEqual(c.subscriptions, [Sub(200, 250)])

        let empty = TestRecorder<[Int]>(scheduler)
        Producer<Int>.combineLatest([]).start(empty.observer)
        XCTAssertEqual(empty.events, [.completed(1000)])
    }
}
