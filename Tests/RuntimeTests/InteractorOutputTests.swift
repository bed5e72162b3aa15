import Runtime
import Streams
import StreamsTesting
import XCTest

/// The ways to read an interactor's state and where its streams start.
final class InteractorOutputTests: XCTestCase {
    private func makeCounter(context: SchedulerContext = .immediate) -> Interactor<Int, Int, Int, Never> {
        Interactor(
            initial: 0, context: context, handle: { n, _ in .one(n) },
            reduce: { count, n in
                count += n; return nil
            })
    }

    func testObserveStateSeesEveryChangeUntilDisposed() {
        let counter = makeCounter()
        let seen = Locked<[Int]>([])
        let subscription = counter.observeState { state in seen.mutate { $0.append(state) } }
        counter.send(1)
        counter.send(2)
        subscription.dispose()
        counter.send(3)
        XCTAssertEqual(seen.value, [1, 3], "changes only, not the current state, and nothing after dispose")
        XCTAssertEqual(counter.currentState, 6)
    }

    func testAStatePropertyAskedForLateStartsFromTheLatestState() {
        let counter = makeCounter()
        counter.send(5)
        counter.send(6)
        let states = Recording(counter.state.producer)
        counter.send(1)
        XCTAssertEqual(states.values, [11, 12])
        XCTAssertEqual(counter.state.value, 12, "every read of `state` views the same storage")
    }

    func testAProducerHandlerIsTheStreamForm() {
        let scheduler = TestScheduler()
        let interactor = Interactor<[String], String, String, Never>(
            initial: [],
            handle: { text, _ in Producer.timer(10, text.uppercased(), on: scheduler).startWith(text) },
            reduce: { log, entry in
                log.append(entry); return nil
            })
        interactor.send("a")
        XCTAssertEqual(interactor.state.value, ["a"])
        scheduler.advance(by: 10)
        XCTAssertEqual(interactor.state.value, ["a", "A"])
    }

    func testStreamsStartOnTheWorkScheduler() {
        let work = TestScheduler()
        let interactor = Interactor<[Int], Int, Int, Never>(
            initial: [], context: SchedulerContext(work: work),
            handle: { n, _ in n > 0 ? .stream(.just(n)) : .one(n) },
            reduce: { log, n in
                log.append(n); return nil
            })
        interactor.send(1)
        interactor.send(-1)
        XCTAssertEqual(interactor.state.value, [-1], "the stream waits for the work scheduler; sync mutations do not")
        XCTAssertEqual(interactor.inFlight.map(\.actionID), [1])
        work.advance()
        XCTAssertEqual(interactor.state.value, [-1, 1])
        XCTAssertTrue(interactor.isIdle)
    }
}
