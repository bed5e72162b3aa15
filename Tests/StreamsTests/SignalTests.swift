import Streams
import StreamsTesting
import XCTest

final class SignalTests: XCTestCase {
    func testPipeFansOutToCurrentObservers() {
        let scheduler = TestScheduler()
        let (signal, input) = Signal<Int>.pipe()
        let first = TestRecorder<Int>(scheduler)
        let second = TestRecorder<Int>(scheduler)
        signal.observe(first.observer)
        input.send(value: 1)
        signal.observe(second.observer)
        input.send(value: 2)
        input.sendCompleted()
        XCTAssertEqual(first.values, [1, 2])
        XCTAssertEqual(second.values, [2])
        XCTAssertEqual(second.events.last, .completed(0))
    }

    func testLateObserverGetsTheTerminalEventAtOnce() {
        let scheduler = TestScheduler()
        let (signal, input) = Signal<Int>.pipe()
        input.sendFailed(testError)
        input.send(value: 1)
        let recorder = TestRecorder<Int>(scheduler)
        XCTAssertNil(signal.observe(recorder.observer))
        XCTAssertEqual(recorder.events, [.failed(0, testError)])
    }

    func testDisposingStopsDelivery() {
        let (signal, input) = Signal<Int>.pipe()
        let seen = Locked<[Int]>([])
        let subscription = signal.observe(value: { value in seen.withLock { $0.append(value) } })
        input.send(value: 1)
        subscription?.dispose()
        input.send(value: 2)
        XCTAssertEqual(seen.withLock { $0 }, [1])
    }

    func testReentrantSendIsQueuedBehindTheCurrentEvent() {
        let (signal, input) = Signal<Int>.pipe()
        let log = Locked<[String]>([])
        signal.observe(value: { value in
            log.withLock { $0.append("begin \(value)") }
            if value == 1 { input.send(value: 2) }
            log.withLock { $0.append("end \(value)") }
        })
        input.send(value: 1)
        XCTAssertEqual(log.withLock { $0 }, ["begin 1", "end 1", "begin 2", "end 2"])
        input.sendCompleted()  // the observer holds the input that feeds it
    }

    func testProducerObservesUntilDisposed() {
        let scheduler = TestScheduler()
        let (signal, input) = Signal<String>.pipe()
        let recorder = TestRecorder<String>(scheduler)
        let subscription = signal.producer.map { $0.uppercased() }.start(recorder.observer)
        input.send(value: "a")
        subscription.dispose()
        input.send(value: "b")
        XCTAssertEqual(recorder.values, ["A"])
    }

    func testInterruptedTravelsDownstream() {
        let scheduler = TestScheduler()
        let (signal, input) = Signal<Int>.pipe()
        let recorder = TestRecorder<Int>(scheduler)
        signal.producer.map { $0 + 1 }.start(recorder.observer)
        input.sendInterrupted()
        XCTAssertEqual(recorder.events, [.interrupted(0)])
    }
}
