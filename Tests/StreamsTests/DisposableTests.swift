import Streams
import StreamsTesting
import XCTest

final class DisposableTests: XCTestCase {
    func testAnyDisposableRunsItsActionOnce() {
        let count = Locked(0)
        let disposable = AnyDisposable { count.withLock { $0 += 1 } }
        XCTAssertFalse(disposable.isDisposed)
        disposable.dispose()
        disposable.dispose()
        XCTAssertTrue(disposable.isDisposed)
        XCTAssertEqual(count.withLock { $0 }, 1)
    }

    func testCompositeDisposesEverythingInOrderAndLateAdditionsAtOnce() {
        let order = Locked<[Int]>([])
        let composite = CompositeDisposable()
        composite.add { order.withLock { $0.append(1) } }
        composite += AnyDisposable { order.withLock { $0.append(2) } }
        let removed = composite.add { order.withLock { $0.append(99) } }
        composite.remove(removed!)
        composite.dispose()
        XCTAssertEqual(order.withLock { $0 }, [1, 2])
        let late = AnyDisposable()
        XCTAssertNil(composite.add(late))
        XCTAssertTrue(late.isDisposed)
    }

    func testSerialDisposableReplacesAndDisposesTheOld() {
        let serial = SerialDisposable()
        let first = AnyDisposable()
        let second = AnyDisposable()
        serial.inner = first
        serial.inner = second
        XCTAssertTrue(first.isDisposed)
        XCTAssertFalse(second.isDisposed)
        serial.dispose()
        XCTAssertTrue(second.isDisposed)
        let third = AnyDisposable()
        serial.inner = third
        XCTAssertTrue(third.isDisposed)
    }

    func testLifetimeTokenEndsTheLifetimeWhenReleased() {
        let ended = Locked(false)
        var token: Lifetime.Token?
        do {
            let made = Lifetime.make()
            token = made.token
            made.lifetime.observeEnded { ended.withLock { $0 = true } }
            XCTAssertFalse(made.lifetime.hasEnded)
        }
        XCTAssertFalse(ended.withLock { $0 })
        token = nil
        XCTAssertTrue(ended.withLock { $0 })
        XCTAssertNil(token)
    }

    func testDisposingASubscriptionRunsTeardownAndDeliversNothingMore() {
        let scheduler = TestScheduler()
        let torndown = Locked(false)
        let (signal, input) = Signal<Int>.pipe()
        let producer = Producer<Int> { observer, lifetime in
            lifetime.observeEnded { torndown.withLock { $0 = true } }
            lifetime += signal.observe(observer)
        }
        let recorder = TestRecorder<Int>(scheduler)
        let subscription = producer.start(recorder.observer)
        input.send(value: 1)
        subscription.dispose()
        input.send(value: 2)
        input.sendCompleted()
        XCTAssertTrue(torndown.withLock { $0 })
        XCTAssertEqual(recorder.events, [.value(0, 1)], "no .interrupted is sent to the one who disposed")
    }

    func testTerminalEventEndsTheLifetimeBeforeReachingTheObserver() {
        let order = Locked<[String]>([])
        let producer = Producer<Int> { observer, lifetime in
            lifetime.observeEnded { order.withLock { $0.append("teardown") } }
            observer.sendCompleted()
            observer.send(value: 1)
            observer.sendCompleted()
        }
        producer.start(Observer { event in order.withLock { $0.append("\(event)") } })
        XCTAssertEqual(order.withLock { $0 }, ["teardown", "completed"])
    }

    func testSynchronousSourceStopsWhenTheSubscriptionEnds() {
        let produced = Locked(0)
        let numbers = Producer<Int> { observer, lifetime in
            var next = 0
            while !lifetime.hasEnded {
                produced.withLock { $0 += 1 }
                observer.send(value: next)
                next += 1
            }
        }
        let seen = Locked<[Int]>([])
        numbers.take(3).start(value: { value in seen.withLock { $0.append(value) } })
        XCTAssertEqual(seen.withLock { $0 }, [0, 1, 2])
        XCTAssertEqual(produced.withLock { $0 }, 3)
    }
}
