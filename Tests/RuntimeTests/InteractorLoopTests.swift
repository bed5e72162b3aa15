import Foundation
import Runtime
import Streams
import StreamsTesting
import XCTest

/// The loop's ordering contract: synchronous mutations, state feedback and re-entrant sends.
final class InteractorLoopTests: XCTestCase {
    enum Action: Sendable, Equatable { case first, second, add(Int), pairStream(Int), pairMany(Int) }
    enum Mutation: Sendable, Equatable { case log(String), added(Int) }
    struct State: Sendable, Equatable {
        var log: [String] = []
        var total = 0
    }

    @Sendable
    private static func reduce(_ state: inout State, _ mutation: Mutation) -> Never? {
        switch mutation {
        case .log(let entry): state.log.append(entry)
        case .added(let n): state.total += n
        }
        return nil
    }

    private func makeInteractor(
        seen: Locked<[(Action, State)]> = Locked([]),
        reduce: @escaping @Sendable (inout State, Mutation) throws -> Never? = InteractorLoopTests.reduce
    ) -> Interactor<State, Action, Mutation, Never> {
        Interactor(
            initial: State(),
            handle: { action, state in
                seen.mutate { $0.append((action, state)) }
                switch action {
                case .first: return .many([.log("first-1"), .log("first-2")])
                case .second: return .one(.log("second"))
                case .add(let n): return .one(.added(n))
                case .pairStream(let n): return .stream(.from([.added(n), .added(n)]))
                case .pairMany(let n): return .many([.added(n), .added(n)])
                }
            },
            reduce: reduce)
    }

    func testSynchronousMutationsAreReducedBeforeSendReturns() {
        let interactor = makeInteractor()
        interactor.send(.add(1))
        XCTAssertEqual(interactor.state.value.total, 1)
        interactor.send(.pairMany(2))
        XCTAssertEqual(interactor.state.value.total, 5)
        interactor.send(.pairStream(10))
        XCTAssertEqual(interactor.state.value.total, 25)
        XCTAssertTrue(interactor.isIdle)
    }

    func testHandleSeesTheStateAfterThePreviousActionsSynchronousMutations() {
        let seen = Locked<[(Action, State)]>([])
        let interactor = makeInteractor(seen: seen)
        interactor.send(.pairStream(1))
        interactor.send(.pairMany(10))
        interactor.send(.add(0))
        XCTAssertEqual(seen.value.map(\.1.total), [0, 2, 22])
    }

    func testStateChangesArePublishedAfterEveryMutation() {
        let interactor = makeInteractor()
        let states = Recording(interactor.state.producer)
        interactor.send(.pairStream(1))
        interactor.send(.pairMany(2))
        XCTAssertEqual(states.values.map(\.total), [0, 1, 2, 4, 6])
    }

    func testSendFromAnObserverRunsAfterTheCurrentActionNeverInsideIt() {
        let seen = Locked<[(Action, State)]>([])
        let interactor = makeInteractor(seen: seen)
        let once = Locked(false)
        let subscription = interactor.state.producer.start(value: { [weak interactor] state in
            guard state.log == ["first-1"] else { return }
            once.value = true
            interactor?.send(.second)  // re-entrant: must wait for first-2
        })
        interactor.send(.first)
        XCTAssertTrue(once.value)
        XCTAssertEqual(interactor.state.value.log, ["first-1", "first-2", "second"])
        XCTAssertEqual(seen.value.map(\.0), [.first, .second])
        XCTAssertEqual(seen.value[1].1.log, ["first-1", "first-2"], "the queued action sees both mutations")
        subscription.dispose()
    }

    func testSendFromAReducerIsQueuedInOrder() {
        let target = Locked<Interactor<State, Action, Mutation, Never>?>(nil)
        let interactor = makeInteractor(reduce: { state, mutation in
            if mutation == .log("first-1") {
                target.value?.send(.second)
                target.value?.send(.add(5))
            }
            return Self.reduce(&state, mutation)
        })
        target.value = interactor
        let actions = Recording(interactor.actions)
        interactor.send(.first)
        XCTAssertEqual(interactor.state.value.log, ["first-1", "first-2", "second"])
        XCTAssertEqual(interactor.state.value.total, 5)
        XCTAssertEqual(actions.values.map(\.value), [.first, .second, .add(5)])
        XCTAssertEqual(actions.values.map(\.actionID), [1, 2, 3])
        target.value = nil
    }

    func testTracesNameTheActionEachMutationCameFrom() {
        let interactor = makeInteractor()
        let mutations = Recording(interactor.mutations)
        interactor.send(.add(1))
        interactor.send(.first)
        XCTAssertEqual(mutations.values.map(\.value), [.added(1), .log("first-1"), .log("first-2")])
        XCTAssertEqual(mutations.values.map(\.action), [.add(1), .first, .first])
        XCTAssertEqual(mutations.values.map(\.actionID), [1, 2, 2])
    }

    func testSendsFromManyThreadsAreSerializedAndNoneIsLost() {
        let running = Locked(0)
        let overlapped = Locked(false)
        let interactor = Interactor<Int, Int, Int, Never>(
            initial: 0,
            handle: { n, _ in
                running.mutate {
                    $0 += 1; if $0 > 1 { overlapped.value = true }
                }
                defer { running.mutate { $0 -= 1 } }
                return .one(n)
            },
            reduce: { count, n in
                count += n; return nil
            })
        let mutations = Recording(interactor.mutations)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<500 { interactor.send(1) }
        }
        XCTAssertEqual(interactor.state.value, 4_000)
        XCTAssertFalse(overlapped.value, "handle ran on two threads at once")
        XCTAssertEqual(Set(mutations.values.map(\.actionID)).count, 4_000)
        XCTAssertEqual(mutations.values.map(\.actionID), Array(1...4_000), "mutations are reduced in send order")
    }

    func testAQueueStateSchedulerRunsTheLoopOffTheCallersThread() {
        let scheduler = QueueScheduler(label: "test.state")
        let interactor = Interactor<Int, Int, Int, Never>(
            initial: 0, context: SchedulerContext(state: scheduler),
            handle: { n, _ in .one(n) },
            reduce: { count, n in
                count += n; return nil
            })
        let done = expectation(description: "all reduced")
        let subscription = interactor.state.producer.start(value: { if $0 == 100 { done.fulfill() } })
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<25 { interactor.send(1) }
        }
        wait(for: [done], timeout: 5)
        subscription.dispose()
    }

    func testAnOutputSchedulerDeliversStateInLoopOrder() {
        let output = TestScheduler()
        let interactor = Interactor<Int, Int, Int, Never>(
            initial: 0, context: SchedulerContext(output: output),
            handle: { n, _ in .many([n, n]) },
            reduce: { count, n in
                count += n; return nil
            })
        let states = Recording(interactor.state.producer)
        interactor.send(1)
        interactor.send(10)
        XCTAssertEqual(interactor.state.value, 0, "not delivered before the output scheduler runs")
        output.advance()
        XCTAssertEqual(states.values, [0, 1, 2, 12, 22])
        XCTAssertEqual(interactor.state.value, 22)
    }

    func testOutputsAreAlsoAsyncSequences() async {
        let interactor = makeInteractor()
        let states = interactor.stateValues
        let mutations = interactor.mutationValues
        interactor.send(.add(2))
        interactor.send(.add(3))
        interactor.dispose()
        var totals: [Int] = []
        for await state in states.prefix(3) { totals.append(state.total) }
        var collected: [Mutation] = []
        for await traced in mutations { collected.append(traced.value) }
        XCTAssertEqual(totals, [0, 2, 5])
        XCTAssertEqual(collected, [.added(2), .added(3)])
    }

    func testDefaultActionTypeIsTheCaseNameOrTheNamedType() {
        struct Search: NamedAction, Sendable { var text: String; var actionType: String { "search" } }
        XCTAssertEqual(defaultActionType(Action.add(3)), "add")
        XCTAssertEqual(defaultActionType(Action.first), "first")
        XCTAssertEqual(defaultActionType(Search(text: "a")), "search")
    }

    /// What a host puts off per action (a Lua feature's snapshot) it does once per drain:
    /// `settled` runs when the loop runs out of work, after the last reduce, before it idles.
    func testSettledRunsOnceWhenADrainRunsOutOfWork() {
        let clock = TestScheduler()
        let seen = Locked<[String]>([])
        let interactor = Interactor<Int, Int, Int, Never>(
            initial: 0, context: SchedulerContext(state: clock), actionType: { _ in "n" }, strategy: nil,
            handle: { n, _ in .one(n) },
            reduce: { count, n in
                count += n; seen.mutate { $0.append("reduce \(n)") }; return nil
            },
            step: { n, count in
                count += n; seen.mutate { $0.append("step \(n)") }; return .reduced(effect: nil)
            },
            settled: { seen.mutate { $0.append("settled") } })
        for n in 1...3 { interactor.send(n) }
        XCTAssertEqual(seen.value, [], "nothing runs before the clock does")
        clock.advance(by: 0)
        XCTAssertEqual(seen.value, ["step 1", "step 2", "step 3", "settled"])
        interactor.send(4)
        clock.advance(by: 0)
        XCTAssertEqual(seen.value.suffix(2), ["step 4", "settled"])
        XCTAssertEqual(interactor.state.value, 10)
        XCTAssertTrue(interactor.isIdle)
    }

    /// `outward` gets each effect no handler takes, with the action behind it, before the
    /// `effects` signal does; an effect a handler takes reaches neither.
    func testOutwardGetsTheEffectsNoHandlerTakesBeforeTheSignal() {
        let seen = Locked<[String]>([])
        let interactor = Interactor<Int, Int, Int, String>(
            initial: 0, context: .immediate, actionType: { _ in "n" }, strategy: nil,
            handle: { n, _ in .one(n) },
            reduce: { count, n in
                count += n; return n % 2 == 0 ? "even \(n)" : "handled \(n)"
            },
            step: { n, count in
                count += n; return .reduced(effect: n % 2 == 0 ? "even \(n)" : "handled \(n)")
            },
            effects: { effect, _ in effect.hasPrefix("handled") ? .empty() : nil },
            outward: { traced in seen.mutate { $0.append("outward \(traced.value) from \(traced.action)") } })
        let subscription = interactor.effects.observe { traced in seen.mutate { $0.append("signal \(traced.value)") } }
        defer { subscription?.dispose() }
        for n in 1...4 { interactor.send(n) }
        XCTAssertEqual(
            seen.value, ["outward even 2 from 2", "signal even 2", "outward even 4 from 4", "signal even 4"])
    }
}
