import Runtime
import Streams
import StreamsTesting
import XCTest

/// Each flatten strategy, applied per action type, on virtual time.
final class FlattenStrategyTests: XCTestCase {
    enum Action: Sendable, Equatable { case load(Int, after: Int), search(Int, after: Int) }

    private func makeInteractor(
        _ strategy: FlattenStrategy, scheduler: TestScheduler, handled: Locked<[Int]> = Locked([])
    ) -> Interactor<[Int], Action, Int, Never> {
        Interactor(
            initial: [],
            strategy: { action in if case .load = action { strategy } else { .merge } },
            handle: { action, _ in
                switch action {
                case .load(let id, let delay), .search(let id, let delay):
                    handled.mutate { $0.append(id) }
                    return .stream(.timer(delay, id, on: scheduler))
                }
            },
            reduce: { loaded, id in
                loaded.append(id); return nil
            })
    }

    func testMergeRunsEveryStreamAndInterleavesByTime() {
        let scheduler = TestScheduler()
        let interactor = makeInteractor(.merge, scheduler: scheduler)
        interactor.send(.load(1, after: 200))
        interactor.send(.load(2, after: 100))
        XCTAssertEqual(interactor.inFlight.count, 2)
        scheduler.advance(by: 300)
        XCTAssertEqual(interactor.state.value, [2, 1])
        XCTAssertTrue(interactor.isIdle)
    }

    func testLatestCancelsTheRunningStreamOfTheSameType() {
        let scheduler = TestScheduler()
        let interactor = makeInteractor(.latest, scheduler: scheduler)
        interactor.send(.load(1, after: 200))
        interactor.send(.search(9, after: 250))
        interactor.send(.load(2, after: 100))
        XCTAssertEqual(interactor.inFlight.map(\.action), [.search(9, after: 250), .load(2, after: 100)])
        scheduler.advance(by: 300)
        XCTAssertEqual(interactor.state.value, [2, 9], "load 1 was cancelled; the search (another type) was not")
    }

    func testConcatRunsOneStreamAtATimeInArrivalOrder() {
        let scheduler = TestScheduler()
        let handled = Locked<[Int]>([])
        let interactor = makeInteractor(.concat, scheduler: scheduler, handled: handled)
        interactor.send(.load(1, after: 200))
        interactor.send(.load(2, after: 100))
        interactor.send(.load(3, after: 10))
        XCTAssertEqual(handled.value, [1, 2, 3], "handle runs when the action arrives")
        XCTAssertEqual(interactor.inFlight.map(\.actionID), [1, 2, 3])
        scheduler.advance(by: 200)
        XCTAssertEqual(interactor.state.value, [1])
        scheduler.advance(by: 100)  // 2 started at 200, fires at 300
        XCTAssertEqual(interactor.state.value, [1, 2])
        scheduler.advance(by: 10)
        XCTAssertEqual(interactor.state.value, [1, 2, 3])
        XCTAssertTrue(interactor.isIdle)
    }

    func testExhaustDropsActionsWhileOneOfTheirTypeRuns() {
        let scheduler = TestScheduler()
        let handled = Locked<[Int]>([])
        let interactor = makeInteractor(.exhaust, scheduler: scheduler, handled: handled)
        interactor.send(.load(1, after: 200))
        interactor.send(.load(2, after: 100))
        scheduler.advance(by: 200)
        interactor.send(.load(3, after: 50))
        scheduler.advance(by: 50)
        XCTAssertEqual(interactor.state.value, [1, 3])
        XCTAssertEqual(handled.value, [1, 3], "a dropped action is not handled")
    }

    func testConcurrentLimitStartsWaitingStreamsAsSlotsFree() {
        let scheduler = TestScheduler()
        let interactor = makeInteractor(.concurrent(limit: 2), scheduler: scheduler)
        interactor.send(.load(1, after: 100))
        interactor.send(.load(2, after: 300))
        interactor.send(.load(3, after: 100))  // waits for a slot: starts at 100, fires at 200
        scheduler.advance(by: 200)
        XCTAssertEqual(interactor.state.value, [1, 3])
        scheduler.advance(by: 100)
        XCTAssertEqual(interactor.state.value, [1, 3, 2])
    }

    func testConcatRunsSynchronousHandlingsQueuedBehindAStream() {
        let scheduler = TestScheduler()
        let interactor = Interactor<[Int], Int, Int, Never>(
            initial: [],
            actionType: { _ in "job" },
            strategy: { _ in .concat },
            handle: { n, _ in n < 0 ? .one(n) : .stream(.timer(100, n, on: scheduler)) },
            reduce: { log, n in
                log.append(n); return nil
            })
        interactor.send(1)
        interactor.send(-1)
        interactor.send(-2)
        interactor.send(2)
        XCTAssertEqual(interactor.state.value, [], "the synchronous ones wait for the stream before them")
        scheduler.advance(by: 100)
        XCTAssertEqual(interactor.state.value, [1, -1, -2])
        scheduler.advance(by: 100)
        XCTAssertEqual(interactor.state.value, [1, -1, -2, 2])
    }
}
