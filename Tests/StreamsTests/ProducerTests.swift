import Streams
import StreamsTesting
import XCTest

final class ProducerTests: XCTestCase {
    func testJustSendsValueThenCompletes() {
        let scheduler = TestScheduler()
        let recorder = TestRecorder<Int>(scheduler)
        Producer.just(42).start(recorder.observer)
        XCTAssertEqual(recorder.events, [.value(0, 42), .completed(0)])
    }

    func testMapFilterScanChain() {
        let scheduler = TestScheduler()
        let recorder = TestRecorder<Int>(scheduler)
        Producer.from(1...6).filter { $0.isMultiple(of: 2) }.map { $0 * 10 }.scan(0, +).start(recorder.observer)
        XCTAssertEqual(recorder.values, [20, 60, 120])
        XCTAssertEqual(recorder.events.last, .completed(0))
    }
}
