import Streams
import StreamsTesting
import XCTest

final class OperatorTests: XCTestCase {
    // MARK: map / filter / startWith

    func testMapThrowingFailsTheStream() {
        let scheduler = TestScheduler()
        let recorder = TestRecorder<Int>(scheduler)
        Producer.from([1, 2, 3]).map { value -> Int in
            if value == 2 { throw testError }
            return value * 10
        }.start(recorder.observer)
        XCTAssertEqual(recorder.events, [.value(0, 10), .failed(0, testError)])
    }

    func testFilterKeepsMatchingValues() {
        let scheduler = TestScheduler()
        let recorder = TestRecorder<Int>(scheduler)
        Producer.from(1...6).filter { $0 % 3 == 0 }.start(recorder.observer)
        XCTAssertEqual(recorder.events, [.value(0, 3), .value(0, 6), .completed(0)])
    }

    func testStartWithPrependsValuesAtSubscription() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 3), .completed(220)])
        let res = scheduler.start { xs.producer.startWith(1, 2) }
        XCTAssertEqual(res.events, [.value(200, 1), .value(200, 2), .value(210, 3), .completed(220)])
    }

    // MARK: distinctUntilChanged

    func testDistinctUntilChangedDropsConsecutiveRepeats() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([
            .value(210, 1), .value(220, 1), .value(230, 2), .value(240, 2), .value(250, 1), .completed(260),
        ])
        let res = scheduler.start { xs.producer.distinctUntilChanged() }
        XCTAssertEqual(res.events, [.value(210, 1), .value(230, 2), .value(250, 1), .completed(260)])
    }

    func testDistinctUntilChangedByClosure() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, "a"), .value(220, "A"), .value(230, "b"), .completed(240)])
        let res = scheduler.start { xs.producer.distinctUntilChanged { $0.lowercased() == $1.lowercased() } }
        XCTAssertEqual(res.events, [.value(210, "a"), .value(230, "b"), .completed(240)])
    }

    func testDistinctUntilChangedComparatorThrows() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1), .value(220, 2), .completed(240)])
        let res = scheduler.start { xs.producer.distinctUntilChanged { _, _ in throw testError } }
        XCTAssertEqual(res.events, [.value(210, 1), .failed(220, testError)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 220)])
    }

    func testDistinctUntilChangedAllDifferent() {
        let scheduler = TestScheduler()
        let recorder = TestRecorder<Int>(scheduler)
        Producer.from([1, 2, 3]).distinctUntilChanged().start(recorder.observer)
        XCTAssertEqual(recorder.values, [1, 2, 3])
    }

    // MARK: takeUntil

    func testTakeUntilCompletesOnTheTriggersFirstValue() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1), .value(220, 2), .value(240, 3), .completed(300)])
        let trigger = scheduler.createHotProducer([.value(230, "stop"), .value(260, "again")])
        let res = scheduler.start { xs.producer.takeUntil(trigger.producer) }
        XCTAssertEqual(res.events, [.value(210, 1), .value(220, 2), .completed(230)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 230)])
        XCTAssertEqual(trigger.subscriptions, [Sub(200, 230)])
    }

    func testTakeUntilIgnoresATriggerThatCompletesWithoutValue() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1), .value(240, 2), .completed(300)])
        let trigger = scheduler.createHotProducer([Recorded<Int>.completed(220)])
        let res = scheduler.start { xs.producer.takeUntil(trigger.producer) }
        XCTAssertEqual(res.events, [.value(210, 1), .value(240, 2), .completed(300)])
        XCTAssertEqual(trigger.subscriptions, [Sub(200, 220)])
    }

    func testTakeUntilFailsWhenTheTriggerFails() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1), .value(240, 2), .completed(300)])
        let trigger = scheduler.createHotProducer([Recorded<Int>.failed(220, testError)])
        let res = scheduler.start { xs.producer.takeUntil(trigger.producer) }
        XCTAssertEqual(res.events, [.value(210, 1), .failed(220, testError)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 220)])
    }

    func testTakeUntilAnImmediateTriggerNeverStartsTheSource() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1)])
        let res = scheduler.start { xs.producer.takeUntil(Producer.just(())) }
        XCTAssertEqual(res.events, [.completed(200)])
        XCTAssertEqual(xs.subscriptions, [])
    }

    // MARK: catchError

    func testCatchErrorSwitchesToTheReplacement() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1), .failed(230, testError)])
        let ys = scheduler.createColdProducer([.value(10, 100), .completed(20)])
        let res = scheduler.start { xs.producer.catchError { _ in ys.producer } }
        XCTAssertEqual(res.events, [.value(210, 1), .value(240, 100), .completed(250)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 230)])
        XCTAssertEqual(ys.subscriptions, [Sub(230, 250)])
    }

    func testCatchErrorReceivesTheError() {
        let scheduler = TestScheduler()
        let recorder = TestRecorder<String>(scheduler)
        Producer<String>.fail(testError1).catchError { error in .just("caught \(error)") }.start(recorder.observer)
        XCTAssertEqual(recorder.events, [.value(0, "caught TestError(1)"), .completed(0)])
    }

    func testCatchErrorHandlerThrowing() {
        let scheduler = TestScheduler()
        let recorder = TestRecorder<Int>(scheduler)
        Producer<Int>.fail(testError1).catchError { _ in throw testError2 }.start(recorder.observer)
        XCTAssertEqual(recorder.events, [.failed(0, testError2)])
    }

    func testCatchErrorLeavesCompletionAlone() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1), .completed(230)])
        let res = scheduler.start { xs.producer.catchError { _ in .just(-1) } }
        XCTAssertEqual(res.events, [.value(210, 1), .completed(230)])
    }

    // MARK: flatMap strategies

    func testExhaustIgnoresValuesWhileAnInnerRuns() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 1), .value(230, 2), .value(270, 3), .completed(280)])
        let res = scheduler.start {
            xs.producer.flatMap(.exhaust) { value in Producer.timer(50, value, on: scheduler) }
        }
        XCTAssertEqual(res.events, [.value(260, 1), .value(320, 3), .completed(320)])
        XCTAssertEqual(xs.subscriptions, [Sub(200, 280)])
    }

    func testExhaustAfterSynchronousInnersTakesEveryValue() {
        let scheduler = TestScheduler()
        let recorder = TestRecorder<Int>(scheduler)
        Producer.from([1, 2, 3]).flatMap(.exhaust) { Producer.just($0 * 2) }.start(recorder.observer)
        XCTAssertEqual(recorder.values, [2, 4, 6])
    }

    func testMergeStrategyInterleavesInners() {
        let scheduler = TestScheduler()
        let xs = scheduler.createHotProducer([.value(210, 30), .value(220, 5), .completed(230)])
        let res = scheduler.start {
            xs.producer.flatMap(.merge) { value in Producer.timer(value, value, on: scheduler) }
        }
        XCTAssertEqual(res.events, [.value(225, 5), .value(240, 30), .completed(240)])
    }

    func testStrategyNames() {
        XCTAssertEqual(FlattenStrategy(name: "merge"), .merge)
        XCTAssertEqual(FlattenStrategy(name: "latest"), .latest)
        XCTAssertEqual(FlattenStrategy(name: "concat"), .concat)
        XCTAssertEqual(FlattenStrategy(name: "exhaust"), .exhaust)
        XCTAssertNil(FlattenStrategy(name: "switch"))
        XCTAssertEqual(FlattenStrategy.concurrent(limit: 1), .concat)
        XCTAssertEqual(FlattenStrategy.concurrent(limit: 3).description, "concurrent(3)")
    }

    func testFlatMapDoesNotKeepCompletedInnersAlive() {
        let scheduler = TestScheduler()
        let torndown = Locked(0)
        let (signal, input) = Signal<Int>.pipe()
        let inner = Producer<Int> { observer, lifetime in
            lifetime.observeEnded { torndown.withLock { $0 += 1 } }
            observer.send(value: 1)
            observer.sendCompleted()
        }
        let recorder = TestRecorder<Int>(scheduler)
        let subscription = signal.producer.flatMap(.merge) { _ in inner }.start(recorder.observer)
        for value in 0..<100 { input.send(value: value) }
        XCTAssertEqual(torndown.withLock { $0 }, 100, "each inner is torn down when it completes")
        XCTAssertEqual(recorder.values.count, 100)
        subscription.dispose()
    }
}
