import Streams

/// A feature's state machine: actions in, state and outward effects out, with async work fed back.
///
///     enum Action: Sendable { case increment, reset }
///     enum Mutation: Sendable { case add(Int), zero }
///     let counter = Interactor<Int, Action, Mutation, Never>(
///         initial: 0,
///         handle: { action, _ in action == .increment ? .one(.add(1)) : .one(.zero) },
///         reduce: { count, mutation in
///             if case .add(let n) = mutation { count += n } else { count = 0 }
///             return nil
///         })
///     counter.send(.increment)
///     counter.state.value   // 1
///
/// The loop is `actions.withLatestFrom(states).flatMap(strategy) { handle(action, state) }
/// .scan(initial, reduce)`: `handle` sees the state after every mutation already reduced,
/// including the synchronous mutations of the previous action. An effect returned by `reduce`
/// goes to the effect handler; a stream it returns feeds mutations back into the loop, and an
/// effect it declines (nil) goes out on `effects`. A failing stream or a throwing reducer is
/// reported on `errors` and does not end the loop; a throwing reducer leaves the state unchanged.
///
/// **Threading**: `send`, `cancel`, `inFlight` and `dispose` are callable from any thread. The loop
/// (`handle`, `reduce`, the effect handler) runs on `context.state`, one item at a time, never on
/// two threads at once. A `send` made while an action is being handled (from a reducer, a handler
/// or an observer) is queued and runs after the current one, in order, never inside it. Outputs
/// are delivered on `context.output` in loop order. Debug builds check that the loop's state is
/// only touched by the thread currently running the loop.
public final class Interactor<State: Sendable, Action: Sendable, Mutation: Sendable, Effect: Sendable>: Disposable {
    /// The current state and its changes, delivered on `context.output` after every reduced mutation.
    ///
    /// Created on first use (a loop that nobody observes through a `Property` does not pay for one);
    /// every read returns a view of the same storage.
    public var state: Property<State> { loop.outlet.property }

    /// The latest published state, without going through a `Property`.
    @inlinable public var currentState: State { loop.outlet.value }

    /// Calls `observer` with the state after every reduced mutation (not with the current one),
    /// on `context.output`: the lightweight alternative to observing `state`.
    ///
    ///     let subscription = counter.observeState { count in label.text = "\(count)" }
    ///
    /// - Parameter observer: Runs after each change, before the `state` property's observers.
    /// - Returns: Dispose it to stop observing.
    @discardableResult
    public func observeState(_ observer: @escaping @Sendable (State) -> Void) -> Disposable {
        loop.outlet.observe(observer)
    }
    /// The schedulers this interactor uses.
    public let context: SchedulerContext
    @usableFromInline let loop: InteractorLoop<State, Action, Mutation, Effect>

    /// Creates an interactor whose handler may answer synchronously.
    ///
    /// - Parameters:
    ///   - initial: The state before any mutation.
    ///   - context: Where the loop, the outputs and the streams run.
    ///   - actionType: Names an action's type for strategies and `cancel(actionType:)`;
    ///     defaults to `NamedAction.actionType` or the enum case name.
    ///   - strategy: How handler streams of one action type combine; nil means `.merge` for all.
    ///   - handle: Turns an action and the latest state into mutations.
    ///   - reduce: Applies a mutation to the state; may return an effect; may throw to reject it.
    ///   - effects: Turns an internal effect into a mutation stream; nil sends the effect out.
    public init(
        initial: State,
        context: SchedulerContext = .immediate,
        actionType: @escaping @Sendable (Action) -> String = { defaultActionType($0) },
        strategy: (@Sendable (Action) -> FlattenStrategy)? = nil,
        handle: @escaping @Sendable (Action, State) -> Handled<Mutation>,
        reduce: @escaping @Sendable (inout State, Mutation) throws -> Effect?,
        effects: @escaping @Sendable (Effect, State) -> Producer<Mutation>? = { _, _ in nil }
    ) {
        self.context = context
        self.loop = InteractorLoop(
            initial: initial, outlet: StateOutlet(initial), context: context, actionType: actionType,
            strategy: strategy, handle: handle, reduce: reduce, effects: effects)
    }

    /// Creates an interactor whose handler always returns a stream (the seed's `toSignalProducer`).
    ///
    ///     Interactor<State, Action, Mutation, Never>(initial: .initial,
    ///         handle: { action, state in gateway.fetch().map(Mutation.records).startWith(.loading) },
    ///         reduce: reduce)
    ///
    /// - Parameters: As in the other initializer; `handle` returns a `Producer<Mutation>`.
    public convenience init(
        initial: State,
        context: SchedulerContext = .immediate,
        actionType: @escaping @Sendable (Action) -> String = { defaultActionType($0) },
        strategy: (@Sendable (Action) -> FlattenStrategy)? = nil,
        handle: @escaping @Sendable (Action, State) -> Producer<Mutation>,
        reduce: @escaping @Sendable (inout State, Mutation) throws -> Effect?,
        effects: @escaping @Sendable (Effect, State) -> Producer<Mutation>? = { _, _ in nil }
    ) {
        self.init(
            initial: initial, context: context, actionType: actionType, strategy: strategy,
            handle: { .stream(handle($0, $1)) }, reduce: reduce, effects: effects)
    }

    /// Creates an interactor whose host can also handle and reduce an action in one go:
    /// `step` is used for every action merged (the default strategy) while no one observes
    /// `mutations`; `handle` and `reduce` serve the rest (other strategies, streams' mutations).
    /// `settled` runs on the drainer each time the loop runs out of work, before it goes idle;
    /// `outward` gets every effect no handler takes, as `effects` does, without its signal;
    /// `split` turns an effect that stands for several into them, routed one by one.
    package init(
        initial: State,
        context: SchedulerContext,
        actionType: @escaping @Sendable (Action) -> String,
        strategy: (@Sendable (Action) -> FlattenStrategy)?,
        handle: @escaping @Sendable (Action, State) -> Handled<Mutation>,
        reduce: @escaping @Sendable (inout State, Mutation) throws -> Effect?,
        step: @escaping @Sendable (Action, inout State) -> Stepped<Mutation, Effect>,
        effects: @escaping @Sendable (Effect, State) -> Producer<Mutation>? = { _, _ in nil },
        settled: (@Sendable () -> Void)? = nil,
        outward: (@Sendable (Traced<Effect>) -> Void)? = nil,
        split: (@Sendable (Effect) -> [Effect]?)? = nil
    ) {
        self.context = context
        self.loop = InteractorLoop(
            initial: initial, outlet: StateOutlet(initial), context: context, actionType: actionType,
            strategy: strategy, handle: handle, reduce: reduce, step: step, effects: effects, settled: settled,
            outward: outward, split: split)
    }

    deinit { loop.dispose() }

    /// Sends an action into the loop; callable from any thread.
    ///
    ///     interactor.send(.reload)
    ///
    /// On an immediate state scheduler, an action sent from outside the loop is handled (and its
    /// synchronous mutations reduced) before `send` returns; one sent from inside the loop is queued.
    /// Actions sent after `dispose()` are ignored.
    /// - Parameter action: The action.
    @inlinable
    public func send(_ action: Action) { loop.send(action) }

    /// Outward effects (those the effect handler declined), each with the action it came from.
    public var effects: Signal<Traced<Effect>> { loop.effectsSignal }
    /// Every action as the loop takes it up, numbered in send order.
    public var actions: Signal<Traced<Action>> { loop.actionsSignal }
    /// Every mutation as it is about to be reduced, with the action it came from.
    public var mutations: Signal<Traced<Mutation>> { loop.mutationsSignal }
    /// Errors of handler streams, effect streams and the reducer, with the action that caused them.
    public var errors: Signal<Failure> { loop.errorsSignal }

    /// The action whose handling produced the mutation being reduced: read it from inside
    /// `reduce` (or an observer it calls); nil anywhere else.
    @inlinable public var actionBeingReduced: Action? { loop.confined.pointee.reducing }
    /// The id (`Traced.actionID`) of the action whose work the loop runs now: being handled,
    /// or one of its mutations being reduced. Read it on the loop's thread, from inside it.
    @inlinable package var actionIDAtWork: Int { loop.confined.pointee.working }

    /// The handler streams, effect streams and queued handlings still running, oldest first.
    public var inFlight: [InFlight] { loop.inFlight }
    /// True when nothing is queued, running in the loop, or in flight.
    public var isIdle: Bool { loop.isIdle }

    /// Cancels the streams (handler and effect) started by actions of this type and drops their
    /// queued handlings; values they had already sent but that were not yet reduced are dropped too.
    ///
    ///     interactor.cancel(actionType: "search")
    ///
    /// - Parameter actionType: A name as returned by the `actionType` closure.
    public func cancel(actionType: String) { loop.cancel { $0 == actionType } }

    /// Cancels every stream in flight and drops every queued handling.
    public func cancelAll() { loop.cancel { _ in true } }

    /// Whether `dispose()` was called.
    public var isDisposed: Bool { loop.isDisposed }

    /// Cancels everything in flight, ignores later actions and completes the output signals.
    public func dispose() { loop.dispose() }
}
