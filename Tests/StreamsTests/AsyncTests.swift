import Streams
import StreamsTesting
import XCTest

final class AsyncTests: XCTestCase {
    func testAsyncProducerSendsTheResult() async throws {
        let producer = Producer<Int>(async: { 21 * 2 })
        var received: [Int] = []
        for try await value in producer.values { received.append(value) }
        XCTAssertEqual(received, [42])
    }

    func testAsyncProducerFailsWithTheThrownError() async {
        let producer = Producer<Int>(async: { throw testError1 })
        do {
            for try await _ in producer.values {}
            XCTFail("expected a failure")
        } catch {
            XCTAssertEqual(error as? TestError, testError1)
        }
    }

    func testDisposingCancelsTheTask() async {
        let started = expectation(description: "task started")
        let cancelled = expectation(description: "task saw cancellation")
        let producer = Producer<Int>(async: {
            started.fulfill()
            do {
                try await Task.sleep(nanoseconds: 10_000_000_000)
            } catch {
                cancelled.fulfill()
                throw error
            }
            return 1
        })
        let events = Locked<[String]>([])
        let subscription = producer.start(Observer { event in events.withLock { $0.append("\(event)") } })
        await fulfillment(of: [started], timeout: 5)
        subscription.dispose()
        await fulfillment(of: [cancelled], timeout: 5)
        XCTAssertEqual(events.withLock { $0 }, [], "nothing is delivered after disposal")
    }

    func testValuesIteratesAProducer() async throws {
        var received: [Int] = []
        for try await value in Producer.from(1...4).map({ $0 * $0 }).values { received.append(value) }
        XCTAssertEqual(received, [1, 4, 9, 16])
    }

    func testBreakingOutOfTheIterationDisposes() async throws {
        let ended = expectation(description: "subscription ended")
        let (signal, input) = Signal<Int>.pipe()
        let producer = Producer<Int> { observer, lifetime in
            lifetime.observeEnded { ended.fulfill() }
            lifetime += signal.observe(observer)
        }
        let feeder = Task {
            var next = 0
            while !Task.isCancelled {
                input.send(value: next)
                next += 1
                try? await Task.sleep(nanoseconds: 1_000_000)
            }
        }
        var received: [Int] = []
        for try await value in producer.values {
            received.append(value)
            if received.count == 3 { break }
        }
        await fulfillment(of: [ended], timeout: 5)
        feeder.cancel()
        XCTAssertEqual(received.count, 3)
    }

    func testInterruptionThrowsCancellationError() async {
        let (signal, input) = Signal<Int>.pipe()
        input.sendInterrupted()
        do {
            for try await _ in signal.producer.values {}
            XCTFail("expected CancellationError")
        } catch {
            XCTAssertTrue(error is CancellationError)
        }
    }
}
