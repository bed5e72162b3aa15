import Streams
import StreamsTesting
import XCTest

final class PropertyTests: XCTestCase {
    func testProducerSendsTheCurrentValueThenChanges() {
        let scheduler = TestScheduler()
        let property = MutableProperty(1)
        let recorder = TestRecorder<Int>(scheduler)
        property.producer.start(recorder.observer)
        property.value = 2
        property.modify { $0 += 10 }
        XCTAssertEqual(recorder.values, [1, 2, 12])
        XCTAssertEqual(property.value, 12)
    }

    func testChangesOmitTheCurrentValue() {
        let scheduler = TestScheduler()
        let property = MutableProperty("a")
        let recorder = TestRecorder<String>(scheduler)
        property.changes.start(recorder.observer)
        property.value = "b"
        XCTAssertEqual(recorder.values, ["b"])
    }

    func testReadOnlyViewFollowsTheMutableProperty() {
        let mutable = MutableProperty(0)
        let property = Property(mutable)
        let seen = Locked<[Int]>([])
        property.producer.start(value: { value in seen.withLock { $0.append(value) } })
        mutable.value = 5
        XCTAssertEqual(property.value, 5)
        XCTAssertEqual(seen.withLock { $0 }, [0, 5])
    }

    func testConstantPropertyCompletesAfterItsValue() {
        let scheduler = TestScheduler()
        let recorder = TestRecorder<Int>(scheduler)
        Property(value: 7).producer.start(recorder.observer)
        XCTAssertEqual(recorder.events, [.value(0, 7), .completed(0)])
    }

    func testPropertyFromAProducerHoldsItsLatestValue() {
        let scheduler = TestScheduler()
        let property = Property(initial: 0, then: Producer.interval(100, on: scheduler).map { $0 + 1 }.take(3))
        XCTAssertEqual(property.value, 0)
        scheduler.advance(to: 250)
        XCTAssertEqual(property.value, 2)
        scheduler.run()
        XCTAssertEqual(property.value, 3)
        let recorder = TestRecorder<Int>(scheduler)
        property.producer.start(recorder.observer)
        XCTAssertEqual(
            recorder.events, [.value(300, 3), .completed(300)], "the source completed, so changes have ended")
    }

    func testMappedPropertyTracksTheSource() {
        let mutable = MutableProperty(2)
        let doubled = Property(mutable).map { $0 * 2 }
        XCTAssertEqual(doubled.value, 4)
        mutable.value = 5
        XCTAssertEqual(doubled.value, 10)
    }

    func testAnObserverMaySetThePropertyItObserves() {
        let property = MutableProperty(0)
        let seen = Locked<[Int]>([])
        let observation = property.producer.start(value: { value in
            seen.withLock { $0.append(value) }
            if value < 3 { property.value = value + 1 }
        })
        XCTAssertEqual(seen.withLock { $0 }, [0, 1, 2, 3])
        XCTAssertEqual(property.value, 3)
        observation.dispose()  // the observer holds the property it observes
    }

    func testConcurrentModificationsAreAtomic() {
        let property = MutableProperty(0)
        let seen = Locked(0)
        property.changes.start(value: { _ in seen.withLock { $0 += 1 } })
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<500 { property.modify { $0 += 1 } }
        }
        XCTAssertEqual(property.value, 4000)
        XCTAssertEqual(seen.withLock { $0 }, 4000)
    }

    func testMutablePropertyCompletesItsChangesWhenReleased() {
        let scheduler = TestScheduler()
        let recorder = TestRecorder<Int>(scheduler)
        var property: MutableProperty<Int>? = MutableProperty(1)
        property?.changes.start(recorder.observer)
        property = nil
        XCTAssertEqual(recorder.events, [.completed(0)])
    }

    /// Every observer sees every change once and in order, even when one of them sets the
    /// property, starts another observer or stops one during a delivery.
    func testChangesReachEveryObserverOnceInOrderWhateverObserversDoMeanwhile() {
        let property = MutableProperty(0)
        let first = Locked<[Int]>([]), second = Locked<[Int]>([]), late = Locked<[Int]>([])
        let lateObservation = Locked<Disposable?>(nil)
        let secondObservation = Locked<Disposable?>(nil)
        let a = property.changes.start(value: { value in
            first.withLock { $0.append(value) }
            if value == 1 { property.value = 2 }  // queued: after every observer has seen 1
            if value == 2 {
                // Started mid-delivery: it gets the current value (2) once, not again from the queue.
                lateObservation.withLock {
                    $0 = property.producer.start(value: { v in late.withLock { $0.append(v) } })
                }
            }
            if value == 3 { secondObservation.withLock { $0 }?.dispose() }  // before it sees 3
        })
        secondObservation.withLock { $0 = property.changes.start(value: { v in second.withLock { $0.append(v) } }) }
        property.value = 1
        property.value = 3
        property.value = 4
        XCTAssertEqual(first.withLock { $0 }, [1, 2, 3, 4])
        XCTAssertEqual(second.withLock { $0 }, [1, 2], "stopped by the first observer during the delivery of 3")
        XCTAssertEqual(late.withLock { $0 }, [2, 3, 4])
        a.dispose()
        lateObservation.withLock { $0 }?.dispose()
    }

    func testAPropertyWhoseSourceEndedTellsALateObserverAtOnce() {
        let scheduler = TestScheduler()
        let (values, input) = Signal<Int>.pipe()
        let property = Property(initial: 0, then: values.producer)
        let early = TestRecorder<Int>(scheduler)
        property.producer.start(early.observer)
        input.send(value: 1)
        input.sendCompleted()
        let late = TestRecorder<Int>(scheduler)
        property.changes.start(late.observer)
        XCTAssertEqual(early.events, [.value(0, 0), .value(0, 1), .completed(0)])
        XCTAssertEqual(late.events, [.completed(0)])
        XCTAssertEqual(property.value, 1)
    }
}
