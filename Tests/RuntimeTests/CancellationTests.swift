import Runtime
import Streams
import StreamsTesting
import XCTest

/// Cancelling work: by action type, all at once, on disposal and on release.
final class CancellationTests: XCTestCase {
    enum Action: Sendable, Equatable { case load(Int), poll, hang }

    private func makeInteractor(
        scheduler: TestScheduler, alive: Locked<Int> = Locked(0)
    ) -> Interactor<[Int], Action, Int, Never> {
        Interactor(
            initial: [],
            handle: { action, _ in
                switch action {
                case .load(let id): .stream(.timer(100, id, on: scheduler))
                case .poll: .stream(Producer<Int>.interval(30, on: scheduler).map { _ in -1 })
                case .hang: .stream(tracked(alive))
                }
            },
            reduce: { log, n in
                log.append(n); return nil
            })
    }

    func testCancelByActionTypeStopsOnlyThatType() {
        let scheduler = TestScheduler()
        let interactor = makeInteractor(scheduler: scheduler)
        interactor.send(.load(1))
        interactor.send(.poll)
        interactor.send(.load(2))
        scheduler.advance(by: 60)
        XCTAssertEqual(interactor.state.value, [-1, -1])
        interactor.cancel(actionType: "poll")
        XCTAssertEqual(interactor.inFlight.map(\.actionType), ["load", "load"])
        scheduler.advance(by: 100)
        XCTAssertEqual(interactor.state.value, [-1, -1, 1, 2])
        XCTAssertTrue(interactor.isIdle)
    }

    func testCancelByTypeAlsoCancelsTheEffectsItsActionsStarted() {
        let scheduler = TestScheduler()
        let interactor = Interactor<Int, String, Int, String>(
            initial: 0,
            handle: { _, _ in .one(1) },
            reduce: { total, n in
                total += n; return n == 1 ? "refresh" : nil
            },
            effects: { _, _ in .timer(100, 10, on: scheduler) })
        interactor.send("tap")
        XCTAssertEqual(interactor.inFlight.map(\.actionType), ["tap"])
        interactor.cancel(actionType: "tap")
        scheduler.advance(by: 100)
        XCTAssertEqual(interactor.state.value, 1)
    }

    func testCancelAllStopsEverything() {
        let scheduler = TestScheduler()
        let interactor = makeInteractor(scheduler: scheduler)
        interactor.send(.load(1))
        interactor.send(.poll)
        interactor.cancelAll()
        XCTAssertTrue(interactor.inFlight.isEmpty)
        scheduler.advance(by: 200)
        XCTAssertEqual(interactor.state.value, [])
        interactor.send(.load(3))
        scheduler.advance(by: 100)
        XCTAssertEqual(interactor.state.value, [3], "cancelling does not end the loop")
    }

    func testDisposeCancelsWorkIgnoresLaterActionsAndCompletesOutputs() {
        let scheduler = TestScheduler()
        let alive = Locked(0)
        let interactor = makeInteractor(scheduler: scheduler, alive: alive)
        let effects = Recording(interactor.effects)
        interactor.send(.hang)
        interactor.send(.load(1))
        XCTAssertEqual(alive.value, 1)
        interactor.dispose()
        XCTAssertEqual(alive.value, 0)
        XCTAssertTrue(interactor.isDisposed)
        XCTAssertTrue(effects.hasEnded)
        interactor.send(.load(2))
        scheduler.advance(by: 200)
        XCTAssertEqual(interactor.state.value, [])
        XCTAssertTrue(Recording(interactor.errors).hasEnded, "a signal asked for after disposal is already over")
    }

    func testReleasingTheInteractorCancelsItsWork() {
        let scheduler = TestScheduler()
        let alive = Locked(0)
        weak var weakInteractor: Interactor<[Int], Action, Int, Never>?
        do {
            let interactor = makeInteractor(scheduler: scheduler, alive: alive)
            interactor.send(.hang)
            interactor.send(.poll)
            weakInteractor = interactor
            XCTAssertEqual(alive.value, 1)
        }
        XCTAssertNil(weakInteractor)
        XCTAssertEqual(alive.value, 0)
        XCTAssertEqual(scheduler.pendingCount, 0, "the poll timer was disposed")
    }

    func testInFlightNamesTheActionThatStartedEachUnfinishedStream() {
        let scheduler = TestScheduler()
        let interactor = makeInteractor(scheduler: scheduler)
        interactor.send(.load(1))
        interactor.send(.poll)
        let flights = interactor.inFlight
        XCTAssertEqual(flights.map(\.action), [.load(1), .poll])
        XCTAssertEqual(flights.map(\.actionID), [1, 2])
        XCTAssertTrue(flights.allSatisfy { if case .handler = $0.kind { true } else { false } })
        interactor.cancelAll()
    }
}
