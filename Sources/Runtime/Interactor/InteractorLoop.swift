import Dispatch
import Streams

/// The engine behind `Interactor`: a serialized drain loop over queued actions and arrived mutations.
///
/// Two queues feed it: `actions` (sends) and `arrivals` (values and ends of running streams).
/// Arrivals go first, so every mutation a stream sent synchronously while it was started is
/// reduced before the next action is handled. Whoever finds the loop idle becomes its drainer
/// (inline on an immediate state scheduler, else via `context.state`) until both queues are empty.
///
/// The synchronous path (`send` -> `process` -> `reduceStep` -> `next`) is `@inlinable` so that
/// callers in other modules (the benchmark, the Lua bridge) specialize it for their types instead
/// of paying for generic metadata lookups on every action; so are the effects' way out (`route`,
/// `emit`) and the start of a stream (`startFlight`), whose observer drains the mutations the
/// stream sends later: a loop's work is drained specialized whichever way it arrives.
///
/// **Threading**: `current`, `taps` and `owner` are confined to the drainer; the `draining` flag,
/// set and cleared under `shared`'s lock, hands them from one drainer to the next.
@usableFromInline
final class InteractorLoop<State: Sendable, Action: Sendable, Mutation: Sendable, Effect: Sendable>: @unchecked Sendable
{
    @usableFromInline typealias Owner = Interactor<State, Action, Mutation, Effect>
    @usableFromInline typealias Traced = Owner.Traced
    @usableFromInline typealias Failure = Owner.Failure

    @usableFromInline
    struct Origin {
        @usableFromInline let action: Action
        @usableFromInline let id: Int
        @inlinable init(action: Action, id: Int) { self.action = action; self.id = id }
    }

    @usableFromInline
    enum Arrival {
        case value(Mutation, flight: Int)
        case ended(flight: Int, error: (any Error)?)
    }

    /// The observers of the output signals asked for so far; replaced whole when one is added.
    @usableFromInline
    final class Taps: Sendable {
        @usableFromInline let actions: Observer<Traced<Action>>?
        @usableFromInline let mutations: Observer<Traced<Mutation>>?
        @usableFromInline let effects: Observer<Traced<Effect>>?
        @usableFromInline let errors: Observer<Failure>?

        init(
            actions: Observer<Traced<Action>>? = nil, mutations: Observer<Traced<Mutation>>? = nil,
            effects: Observer<Traced<Effect>>? = nil, errors: Observer<Failure>? = nil
        ) {
            self.actions = actions
            self.mutations = mutations
            self.effects = effects
            self.errors = errors
        }
    }

    @usableFromInline
    struct Shared {
        @usableFromInline var actions = FIFO<Origin>()
        @usableFromInline var arrivals = FIFO<Arrival>()
        @usableFromInline var draining = false
        @usableFromInline var disposed = false
        @usableFromInline var nextActionID = 0
        @usableFromInline var nextFlightID = 0
        @usableFromInline var flights: [Int: Flight] = [:]
        @usableFromInline var waiting: [String: FIFO<Waiting>] = [:]
        @usableFromInline var taps: Taps
        var signals = Signals()
        /// The last drain handed to the state scheduler (it may have run already).
        @usableFromInline var scheduledDrain: Disposable?

        init(taps: Taps) { self.taps = taps }

        @usableFromInline
        func handlers(ofType type: String) -> Int {
            flights.values.reduce(0) { $0 + ($1.isHandler && $1.type == type ? 1 : 0) }
        }
    }

    struct Signals {
        var actions: Signal<Traced<Action>>?
        var mutations: Signal<Traced<Mutation>>?
        var effects: Signal<Traced<Effect>>?
        var errors: Signal<Failure>?
    }

    @usableFromInline
    enum Work {
        case action(Origin)
        case value(Mutation, Origin)
        case ended(Flight, (any Error)?)
        /// Nothing is left to do: `settled` runs before the drainer gives up the loop.
        case settled
        /// The drain's slice of the state executor is used up: the drainer hands the loop to a
        /// later turn of that executor, still draining (so sends keep queueing behind it).
        case yield
    }

    @usableFromInline let handle: @Sendable (Action, State) -> Handled<Mutation>
    @usableFromInline let reduce: @Sendable (inout State, Mutation) throws -> Effect?
    /// Handle and reduce fused (`Stepped`), used for a merged action when no one taps mutations.
    @usableFromInline let step: (@Sendable (Action, inout State) -> Stepped<Mutation, Effect>)?
    @usableFromInline let strategy: (@Sendable (Action) -> FlattenStrategy)?
    @usableFromInline let actionType: @Sendable (Action) -> String
    @usableFromInline let effectHandler: @Sendable (Effect, State) -> Producer<Mutation>?
    /// Runs on the drainer each time it runs out of work, before it gives up the loop (what the
    /// owner put off per action, done once per drain: a Lua feature's snapshot).
    @usableFromInline let settled: (@Sendable () -> Void)?
    /// Called with every effect no handler takes, on the output scheduler, before the
    /// `effects` signal gets it: an owner that forwards effects to listeners of its own
    /// (a Lua feature's outlet) skips the signal's machinery.
    @usableFromInline let outward: (@Sendable (Traced<Effect>) -> Void)?
    /// Splits an effect that stands for several (a Lua `reduce` that returned a list) into
    /// them, each routed in order as if returned alone; nil for a plain effect.
    @usableFromInline let split: (@Sendable (Effect) -> [Effect]?)?
    @usableFromInline let context: SchedulerContext
    @usableFromInline let stateIsImmediate: Bool
    /// A state executor that others share (the main thread): after `slice.nanoseconds` of
    /// draining the loop lets them run, then goes on (`Work.yield`). Nil: drain to the end.
    @usableFromInline let slice: (nanoseconds: UInt64, later: any SlicedScheduler)?
    @usableFromInline let outputIsImmediate: Bool
    @usableFromInline let workIsImmediate: Bool
    @usableFromInline let outlet: StateOutlet<State>
    @usableFromInline let shared: Locked<Shared>

    /// What only the drainer touches, behind a pointer so that no dynamic exclusivity check runs
    /// on the hot path (the `draining` handoff under `shared`'s lock is what makes access exclusive).
    @usableFromInline
    struct Confined {
        @usableFromInline var current: State
        /// The action behind the mutation being reduced (nil outside `reduce`).
        @usableFromInline var reducing: Action?
        /// The id of the action whose work runs now: handled, or its mutation reduced (0 before any).
        @usableFromInline var working = 0
        @usableFromInline var taps: Taps
        @usableFromInline var owner = LoopOwner()
        /// `settled` ran since the last work taken (the next empty queue gives up the loop).
        @usableFromInline var hasSettled = false
    }

    @usableFromInline let confined: UnsafeMutablePointer<Confined>

    @inlinable var current: State {
        get { confined.pointee.current }
        set { confined.pointee.current = newValue }
    }

    @inlinable var taps: Taps { confined.pointee.taps }

    /// Takes the latest taps (called under `shared`'s lock by the drainer).
    @inlinable @inline(__always)
    func refreshTaps(_ shared: borrowing Shared) {
        if confined.pointee.taps !== shared.taps { confined.pointee.taps = shared.taps }
    }

    init(
        initial: State,
        outlet: StateOutlet<State>,
        context: SchedulerContext,
        actionType: @escaping @Sendable (Action) -> String,
        strategy: (@Sendable (Action) -> FlattenStrategy)?,
        handle: @escaping @Sendable (Action, State) -> Handled<Mutation>,
        reduce: @escaping @Sendable (inout State, Mutation) throws -> Effect?,
        step: (@Sendable (Action, inout State) -> Stepped<Mutation, Effect>)? = nil,
        effects: @escaping @Sendable (Effect, State) -> Producer<Mutation>?,
        settled: (@Sendable () -> Void)? = nil,
        outward: (@Sendable (Traced<Effect>) -> Void)? = nil,
        split: (@Sendable (Effect) -> [Effect]?)? = nil
    ) {
        let taps = Taps()
        self.confined = UnsafeMutablePointer<Confined>.allocate(capacity: 1)
        self.confined.initialize(to: Confined(current: initial, taps: taps))
        self.shared = Locked(Shared(taps: taps))
        self.outlet = outlet
        self.context = context
        self.stateIsImmediate = context.stateIsImmediate
        self.slice = (context.state as? any SlicedScheduler).map { ($0.drainSliceNanoseconds, $0) }
        self.outputIsImmediate = context.outputIsImmediate
        self.workIsImmediate = context.workIsImmediate
        self.actionType = actionType
        self.strategy = strategy
        self.handle = handle
        self.reduce = reduce
        self.step = step
        self.effectHandler = effects
        self.settled = settled
        self.outward = outward
        self.split = split
    }

    deinit {
        confined.deinitialize(count: 1)
        confined.deallocate()
    }

    // MARK: Entry points (any thread)

    /// What `send` does with an action, decided under `shared`'s lock.
    @usableFromInline
    enum SendRoute {
        /// The loop is disposed: the action is dropped.
        case ignored
        /// The loop was idle on an immediate state scheduler: this thread handles it now.
        case handleHere(Origin)
        /// Queued, and this thread starts the loop.
        case startLoop
        /// Queued behind the running drainer.
        case queued
    }

    @inlinable
    func send(_ action: Action) {
        let route: SendRoute = shared.withLock { shared in
            guard !shared.disposed else { return .ignored }
            shared.nextActionID += 1
            let origin = Origin(action: action, id: shared.nextActionID)
            if !shared.draining && stateIsImmediate && shared.arrivals.isEmpty && shared.actions.isEmpty {
                // Fast path: the loop is idle, so this thread handles the action right here.
                shared.draining = true
                confined.pointee.owner.enter()
                refreshTaps(shared)
                return .handleHere(origin)
            }
            shared.actions.push(origin)
            guard !shared.draining else { return .queued }
            shared.draining = true
            return .startLoop
        }
        switch route {
        case .handleHere(let origin):
            process(origin)
            drain()
        case .startLoop:
            startDraining()
        case .ignored, .queued:
            break
        }
    }

    @inlinable
    func arrive(_ arrival: Arrival) {
        let start: Bool = shared.withLock { shared in
            guard !shared.disposed else { return false }
            shared.arrivals.push(arrival)
            guard !shared.draining else { return false }
            shared.draining = true
            return true
        }
        if start { startDraining() }
    }

    /// Runs the drain loop for a thread that set `draining` but has not taken ownership yet.
    /// Inlinable like `send`: with a queue or virtual-clock scheduler the drain starts here, and
    /// it must run specialized for the caller's types (no generic metadata lookups per action).
    @inlinable
    func startDraining() {
        if stateIsImmediate {
            shared.withLock { _ in confined.pointee.owner.enter() }
            drain()
        } else {
            let scheduled = context.state.schedule { [self] in
                shared.withLock { _ in confined.pointee.owner.enter() }
                drain()
            }
            // Cancelled by `dispose`: a drain left on a clock that never runs it (a virtual clock
            // dropped with its host) would keep the loop, and the loop that clock.
            shared.withLock { $0.scheduledDrain = scheduled }
        }
    }

    // MARK: The drain loop (the drainer only)

    @inlinable
    func drain() {
        let deadline = slice.map { DispatchTime.now().uptimeNanoseconds &+ $0.nanoseconds } ?? 0
        while let work = next(yieldingAfter: deadline) {
            switch consume work {  // moved out: a copy of the action would cost its retains
            case .action(let origin):
                process(origin)
            case .value(let mutation, let origin):
                reduceStep(mutation, origin)
            case .ended(let flight, let error):
                finish(flight, error)
            case .settled:
                settled?()
            case .yield:
                resumeLater()
                return
            }
        }
    }

    /// Goes on draining on a later turn of the state executor (after what else waits there).
    @usableFromInline
    func resumeLater() {
        guard let slice else { return }
        let scheduled = slice.later.scheduleLater { [self] in
            shared.withLock { _ in confined.pointee.owner.enter() }
            drain()
        }
        shared.withLock { $0.scheduledDrain = scheduled }
    }

    /// Takes the next piece of work, or gives up the loop when there is none. Past `deadline`
    /// (0: none), before another action (an action's own arrivals come first, so a `send` on
    /// the executor has reduced its synchronous mutations when it returns): `.yield`.
    @inlinable
    func next(yieldingAfter deadline: UInt64 = 0) -> Work? {
        shared.withLock { shared in
            confined.pointee.owner.check()
            if !shared.disposed {
                if !shared.arrivals.isEmpty, let work = Self.nextArrival(&shared) {
                    refreshTaps(shared)
                    confined.pointee.hasSettled = false
                    return work
                }
                if deadline != 0, !shared.actions.isEmpty, DispatchTime.now().uptimeNanoseconds >= deadline {
                    confined.pointee.owner.leave()
                    return .yield
                }
                if let origin = shared.actions.pop() {
                    refreshTaps(shared)
                    confined.pointee.hasSettled = false
                    return .action(origin)
                }
                if settled != nil && !confined.pointee.hasSettled {
                    confined.pointee.hasSettled = true
                    return .settled
                }
            }
            confined.pointee.hasSettled = false
            confined.pointee.owner.leave()
            shared.draining = false
            return nil
        }
    }

    @usableFromInline
    static func nextArrival(_ shared: inout Shared) -> Work? {
        while let arrival = shared.arrivals.pop() {
            switch arrival {
            case .value(let mutation, let id):
                guard let flight = shared.flights[id] else { continue }  // cancelled
                return .value(mutation, flight.origin)
            case .ended(let id, let error):
                guard let flight = shared.flights.removeValue(forKey: id) else { continue }
                return .ended(flight, error)
            }
        }
        return nil
    }

    @inlinable
    func process(_ origin: Origin) {
        confined.pointee.owner.check()
        confined.pointee.working = origin.id
        if let tap = taps.actions {
            emit(tap, Traced(value: origin.action, action: origin.action, actionID: origin.id))
        }
        if let strategy, case let chosen = strategy(origin.action), chosen != .merge {
            process(origin, strategy: chosen)
        } else if let step, taps.mutations == nil {
            stepped(step, origin)
        } else {
            apply(handle(origin.action, current), origin, type: nil)
        }
    }

    /// Handles and reduces in one go (`step`); what `reduceStep` does after `reduce` follows
    /// when it did both, with `reducing` set throughout, as there.
    @inlinable
    func stepped(_ step: @Sendable (Action, inout State) -> Stepped<Mutation, Effect>, _ origin: Origin) {
        var next = confined.pointee.current
        confined.pointee.reducing = origin.action
        defer { confined.pointee.reducing = nil }
        switch step(origin.action, &next) {
        case .handled(let handled):
            confined.pointee.reducing = nil
            apply(handled, origin, type: nil)
        case .reduced(let effect):
            confined.pointee.current = next
            publish(next)
            if let effect { route(effect, origin, state: next) }
        case .failed(let error):
            fail(error, origin, .reduce)
        }
    }

    @inlinable
    func apply(_ handled: Handled<Mutation>, _ origin: Origin, type: String?) {
        switch handled {
        case .none:
            break
        case .one(let mutation):
            reduceStep(mutation, origin)
        case .many(let mutations):
            for mutation in mutations { reduceStep(mutation, origin) }
        case .stream(let producer):
            startFlight(producer, origin, type: type ?? actionType(origin.action), kind: .handler)
        }
    }

    @inlinable
    func reduceStep(_ mutation: Mutation, _ origin: Origin) {
        confined.pointee.owner.check()
        confined.pointee.working = origin.id
        if let tap = taps.mutations { emit(tap, Traced(value: mutation, action: origin.action, actionID: origin.id)) }
        var next = confined.pointee.current
        let effect: Effect?
        confined.pointee.reducing = origin.action
        defer { confined.pointee.reducing = nil }
        do {
            effect = try reduce(&next, mutation)
        } catch {
            fail(error, origin, .reduce)
            return
        }
        confined.pointee.current = next
        publish(next)
        if let effect { route(effect, origin, state: next) }
    }

    @inlinable
    func publish(_ state: State) {
        if outputIsImmediate {
            outlet.publish(state)
        } else {
            let outlet = self.outlet
            context.output.schedule { outlet.publish(state) }
        }
    }

    /// Gives an effect (each of a list, in order) to the effect handler; a stream it returns
    /// is started, else the effect goes out.
    @inlinable
    func route(_ effect: Effect, _ origin: Origin, state: State) {
        if let split, let effects = split(effect) {
            for effect in effects { routeOne(effect, origin, state: state) }
            return
        }
        routeOne(effect, origin, state: state)
    }

    @inlinable
    func routeOne(_ effect: Effect, _ origin: Origin, state: State) {
        if let producer = effectHandler(effect, state) {
            startFlight(producer, origin, type: actionType(origin.action), kind: .effect(effect))
            return
        }
        let tap = taps.effects
        guard outward != nil || tap != nil else { return }
        let traced = Traced(value: effect, action: origin.action, actionID: origin.id)
        if let outward {
            if outputIsImmediate { outward(traced) } else { context.output.schedule { outward(traced) } }
        }
        if let tap { emit(tap, traced) }
    }

    @inlinable
    func fail(_ error: any Error, _ origin: Origin, _ stage: Failure.Stage) {
        if let tap = taps.errors {
            emit(tap, Failure(error: error, action: origin.action, actionID: origin.id, stage: stage))
        }
    }

    @inlinable
    func emit<Value>(_ observer: Observer<Value>, _ value: Value) {
        if outputIsImmediate {
            observer.send(value: value)
        } else {
            context.output.schedule { observer.send(value: value) }
        }
    }

    // MARK: Control (any thread)

    var isDisposed: Bool { shared.withLock { $0.disposed } }

    func dispose() {
        let (doomed, taps): ([Disposable], Taps?) = shared.withLock { shared in
            guard !shared.disposed else { return ([], nil) }
            shared.disposed = true
            shared.waiting = [:]
            shared.actions.removeAll()
            shared.arrivals.removeAll()
            let taps = shared.taps
            shared.taps = Taps()
            var doomed: [Disposable] = Self.removeFlights(from: &shared) { _ in true }
            if let drain = shared.scheduledDrain {
                // A drain that never starts leaves the loop idle; one already running stops at its next step.
                doomed.append(drain)
                shared.scheduledDrain = nil
                shared.draining = false
            }
            return (doomed, taps)
        }
        doomed.forEach { $0.dispose() }
        guard let taps else { return }
        let complete: @Sendable () -> Void = {
            taps.actions?.sendCompleted()
            taps.mutations?.sendCompleted()
            taps.effects?.sendCompleted()
            taps.errors?.sendCompleted()
        }
        if outputIsImmediate { complete() } else { context.output.schedule(complete) }
    }

    var isIdle: Bool {
        // `waiting.isEmpty` first: `allSatisfy` runs unspecialized here and looks up its
        // iterator type by name on first use (see `removeFlights`); usually nothing waits.
        shared.withLock { shared in
            !shared.draining && shared.actions.isEmpty && shared.arrivals.isEmpty && shared.flights.isEmpty
                && (shared.waiting.isEmpty || shared.waiting.values.allSatisfy(\.isEmpty))
        }
    }

    // MARK: Outputs (created on first use)

    var actionsSignal: Signal<Traced<Action>> {
        signal(\.actions) { Taps(actions: $1, mutations: $0.mutations, effects: $0.effects, errors: $0.errors) }
    }

    var mutationsSignal: Signal<Traced<Mutation>> {
        signal(\.mutations) { Taps(actions: $0.actions, mutations: $1, effects: $0.effects, errors: $0.errors) }
    }

    var effectsSignal: Signal<Traced<Effect>> {
        signal(\.effects) { Taps(actions: $0.actions, mutations: $0.mutations, effects: $1, errors: $0.errors) }
    }

    var errorsSignal: Signal<Failure> {
        signal(\.errors) { Taps(actions: $0.actions, mutations: $0.mutations, effects: $0.effects, errors: $1) }
    }

    /// The output signal at `path`, created (and its observer added to the taps) on first use.
    private func signal<Value>(
        _ path: WritableKeyPath<Signals, Signal<Value>?>, adding: (Taps, Observer<Value>) -> Taps
    ) -> Signal<Value> {
        let (made, input): (Signal<Value>, Observer<Value>?) = shared.withLock { shared in
            if let existing = shared.signals[keyPath: path] { return (existing, nil) }
            let (output, input) = Signal<Value>.pipe()
            shared.signals[keyPath: path] = output
            if shared.disposed { return (output, input) }
            shared.taps = adding(shared.taps, input)
            return (output, nil)
        }
        input?.sendCompleted()  // asked for after disposal: already over
        return made
    }
}
