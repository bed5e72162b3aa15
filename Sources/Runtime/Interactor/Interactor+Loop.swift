#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Streams

/// The engine behind `Interactor`: a serialized drain loop over queued actions and arrived mutations.
///
/// Two queues feed it: `actions` (sends) and `arrivals` (values and ends of running streams).
/// Arrivals go first, so every mutation a stream sent synchronously while it was started is
/// reduced before the next action is handled. Whoever finds the loop idle becomes its drainer
/// (inline on an immediate state scheduler, else via `context.state`) until both queues are empty.
///
/// **Threading**: `current`, `taps` and `owner` are confined to the drainer; the `draining` flag,
/// set and cleared under `shared`'s lock, hands them from one drainer to the next.
final class InteractorLoop<State: Sendable, Action: Sendable, Mutation: Sendable, Effect: Sendable>: @unchecked Sendable {
    typealias Owner = Interactor<State, Action, Mutation, Effect>
    typealias Traced = Owner.Traced
    typealias Failure = Owner.Failure

    struct Origin {
        let action: Action
        let id: Int
    }

    enum Arrival {
        case value(Mutation, flight: Int)
        case ended(flight: Int, error: (any Error)?)
    }

    enum FlightKind {
        case handler
        case effect(Effect)
    }

    struct Flight {
        let origin: Origin
        let type: String
        let kind: FlightKind
        let disposable: SerialDisposable
        var isHandler: Bool { if case .handler = kind { true } else { false } }
    }

    /// A `concat` handling waiting for the running one of its type.
    struct Waiting {
        let handled: Handled<Mutation>
        let origin: Origin
        let limit: Int
    }

    /// The observers of the lazily created output signals; nil until someone asks for the signal.
    struct Taps {
        var actions: Observer<Traced<Action>>?
        var mutations: Observer<Traced<Mutation>>?
        var effects: Observer<Traced<Effect>>?
        var errors: Observer<Failure>?
    }

    struct Shared {
        var actions = FIFO<Origin>()
        var arrivals = FIFO<Arrival>()
        var draining = false
        var disposed = false
        var nextActionID = 0
        var nextFlightID = 0
        var flights: [Int: Flight] = [:]
        var waiting: [String: FIFO<Waiting>] = [:]
        var taps = Taps()
        var signals = Signals()

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

    enum Work {
        case action(Origin)
        case value(Mutation, Origin)
        case ended(Flight, (any Error)?)
    }

    private let handle: @Sendable (Action, State) -> Handled<Mutation>
    private let reduce: @Sendable (inout State, Mutation) throws -> Effect?
    private let strategy: @Sendable (Action) -> FlattenStrategy
    private let actionType: @Sendable (Action) -> String
    private let effectHandler: @Sendable (Effect, State) -> Producer<Mutation>?
    private let context: SchedulerContext
    private let stateIsImmediate: Bool
    private let outputIsImmediate: Bool
    private let workIsImmediate: Bool
    private let property: MutableProperty<State>
    private let shared = Locked(Shared())

    // Confined to the drainer.
    private var current: State
    private var taps = Taps()
    private var owner = LoopOwner()

    init(
        initial: State,
        property: MutableProperty<State>,
        context: SchedulerContext,
        actionType: @escaping @Sendable (Action) -> String,
        strategy: @escaping @Sendable (Action) -> FlattenStrategy,
        handle: @escaping @Sendable (Action, State) -> Handled<Mutation>,
        reduce: @escaping @Sendable (inout State, Mutation) throws -> Effect?,
        effects: @escaping @Sendable (Effect, State) -> Producer<Mutation>?
    ) {
        self.current = initial
        self.property = property
        self.context = context
        self.stateIsImmediate = context.stateIsImmediate
        self.outputIsImmediate = context.outputIsImmediate
        self.workIsImmediate = context.workIsImmediate
        self.actionType = actionType
        self.strategy = strategy
        self.handle = handle
        self.reduce = reduce
        self.effectHandler = effects
    }

    // MARK: Entry points (any thread)

    func send(_ action: Action) {
        var fast: Origin?
        var start = false
        shared.withLock { shared in
            guard !shared.disposed else { return }
            shared.nextActionID += 1
            let origin = Origin(action: action, id: shared.nextActionID)
            if !shared.draining && stateIsImmediate && shared.arrivals.isEmpty && shared.actions.isEmpty {
                // Fast path: the loop is idle, so handle this action right here.
                shared.draining = true
                owner.enter()
                taps = shared.taps
                fast = origin
            } else {
                shared.actions.push(origin)
                if !shared.draining {
                    shared.draining = true
                    start = true
                }
            }
        }
        if let fast {
            process(fast)
            drain()
        } else if start {
            startDraining()
        }
    }

    private func arrive(_ arrival: Arrival) {
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
    private func startDraining() {
        if stateIsImmediate {
            shared.withLock { _ in owner.enter() }
            drain()
        } else {
            context.state.schedule { [self] in
                shared.withLock { _ in owner.enter() }
                drain()
            }
        }
    }

    // MARK: The drain loop (the drainer only)

    private func drain() {
        while let work = next() {
            switch work {
            case .action(let origin):
                process(origin)
            case .value(let mutation, let origin):
                reduceStep(mutation, origin)
            case .ended(let flight, let error):
                if let error { fail(error, flight.origin, flight.isHandler ? .handle : .effect) }
                if flight.isHandler { startWaiting(type: flight.type) }
            }
        }
    }

    /// Takes the next piece of work, or gives up the loop when there is none.
    private func next() -> Work? {
        shared.withLock { shared in
            owner.check()
            if !shared.disposed {
                while let arrival = shared.arrivals.pop() {
                    switch arrival {
                    case .value(let mutation, let id):
                        guard let flight = shared.flights[id] else { continue }   // cancelled
                        taps = shared.taps
                        return .value(mutation, flight.origin)
                    case .ended(let id, let error):
                        guard let flight = shared.flights.removeValue(forKey: id) else { continue }
                        taps = shared.taps
                        return .ended(flight, error)
                    }
                }
                if let origin = shared.actions.pop() {
                    taps = shared.taps
                    return .action(origin)
                }
            }
            owner.leave()
            shared.draining = false
            return nil
        }
    }

    private func process(_ origin: Origin) {
        owner.check()
        if let tap = taps.actions { emit(tap, Traced(value: origin.action, action: origin.action, actionID: origin.id)) }
        let strategy = self.strategy(origin.action)
        if strategy == .merge {
            apply(handle(origin.action, current), origin, type: nil)
            return
        }
        let type = actionType(origin.action)
        if strategy == .latest {
            cancelFlights { $0.isHandler && $0.type == type }
            apply(handle(origin.action, current), origin, type: type)
        } else if strategy == .exhaust {
            guard !shared.withLock({ $0.handlers(ofType: type) > 0 }) else { return }
            apply(handle(origin.action, current), origin, type: type)
        } else {
            // `.concat` and `.concurrent(limit:)`: handle now, start when a slot of this type is free.
            let limit = strategy.concurrencyLimit
            let handled = handle(origin.action, current)
            let queued: Bool = shared.withLock { shared in
                guard shared.handlers(ofType: type) >= limit || !(shared.waiting[type]?.isEmpty ?? true) else { return false }
                shared.waiting[type, default: FIFO()].push(Waiting(handled: handled, origin: origin, limit: limit))
                return true
            }
            if !queued { apply(handled, origin, type: type) }
        }
    }

    private func apply(_ handled: Handled<Mutation>, _ origin: Origin, type: String?) {
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

    private func reduceStep(_ mutation: Mutation, _ origin: Origin) {
        owner.check()
        if let tap = taps.mutations { emit(tap, Traced(value: mutation, action: origin.action, actionID: origin.id)) }
        var next = current
        let effect: Effect?
        do {
            effect = try reduce(&next, mutation)
        } catch {
            fail(error, origin, .reduce)
            return
        }
        let reduced = next
        current = reduced
        if outputIsImmediate {
            property.value = reduced
        } else {
            let property = self.property
            context.output.schedule { property.value = reduced }
        }
        guard let effect else { return }
        if let producer = effectHandler(effect, reduced) {
            startFlight(producer, origin, type: actionType(origin.action), kind: .effect(effect))
        } else if let tap = taps.effects {
            emit(tap, Traced(value: effect, action: origin.action, actionID: origin.id))
        }
    }

    /// Starts the next `concat` handlings of `type` while none of its handler streams is running.
    private func startWaiting(type: String) {
        while let waiting: Waiting = shared.withLock({ shared in
            guard let first = shared.waiting[type]?.elements.first,
                shared.handlers(ofType: type) < first.limit else { return nil }
            return shared.waiting[type]?.pop()
        }) {
            apply(waiting.handled, waiting.origin, type: type)
        }
    }

    private func startFlight(_ producer: Producer<Mutation>, _ origin: Origin, type: String, kind: FlightKind) {
        let disposable = SerialDisposable()
        let id: Int? = shared.withLock { shared in
            guard !shared.disposed else { return nil }
            shared.nextFlightID += 1
            shared.flights[shared.nextFlightID] = Flight(origin: origin, type: type, kind: kind, disposable: disposable)
            return shared.nextFlightID
        }
        guard let id else { return }
        let observer = Observer<Mutation> { [weak self] event in
            switch event {
            case .value(let mutation): self?.arrive(.value(mutation, flight: id))
            case .failed(let error): self?.arrive(.ended(flight: id, error: error))
            case .completed, .interrupted: self?.arrive(.ended(flight: id, error: nil))
            }
        }
        if workIsImmediate {
            disposable.inner = producer.start(observer)
        } else {
            context.work.schedule { disposable.inner = producer.start(observer) }
        }
    }

    private func fail(_ error: any Error, _ origin: Origin, _ stage: Failure.Stage) {
        if let tap = taps.errors { emit(tap, Failure(error: error, action: origin.action, actionID: origin.id, stage: stage)) }
    }

    private func emit<Value>(_ observer: Observer<Value>, _ value: Value) {
        if outputIsImmediate {
            observer.send(value: value)
        } else {
            context.output.schedule { observer.send(value: value) }
        }
    }

    // MARK: Control (any thread)

    func cancel(where matches: (String) -> Bool) {
        let doomed: [SerialDisposable] = shared.withLock { shared in
            for type in shared.waiting.keys where matches(type) { shared.waiting[type] = nil }
            return Self.removeFlights(from: &shared) { matches($0.type) }
        }
        doomed.forEach { $0.dispose() }
    }

    private func cancelFlights(where matches: (Flight) -> Bool) {
        let doomed = shared.withLock { Self.removeFlights(from: &$0, where: matches) }
        doomed.forEach { $0.dispose() }
    }

    private static func removeFlights(from shared: inout Shared, where matches: (Flight) -> Bool) -> [SerialDisposable] {
        let ids = shared.flights.filter { matches($0.value) }.keys
        return ids.compactMap { shared.flights.removeValue(forKey: $0)?.disposable }
    }

    var isDisposed: Bool { shared.withLock { $0.disposed } }

    func dispose() {
        let (doomed, taps): ([SerialDisposable], Taps) = shared.withLock { shared in
            guard !shared.disposed else { return ([], Taps()) }
            shared.disposed = true
            shared.waiting = [:]
            shared.actions.removeAll()
            shared.arrivals.removeAll()
            let taps = shared.taps
            shared.taps = Taps()
            return (Self.removeFlights(from: &shared) { _ in true }, taps)
        }
        doomed.forEach { $0.dispose() }
        let complete: @Sendable () -> Void = {
            taps.actions?.sendCompleted()
            taps.mutations?.sendCompleted()
            taps.effects?.sendCompleted()
            taps.errors?.sendCompleted()
        }
        if outputIsImmediate { complete() } else { context.output.schedule(complete) }
    }

    var inFlight: [Owner.InFlight] {
        shared.withLock { shared in
            let running = shared.flights.sorted { $0.key < $1.key }.map { _, flight in
                let kind: Owner.InFlight.Kind
                switch flight.kind {
                case .handler: kind = .handler
                case .effect(let effect): kind = .effect(effect)
                }
                return Owner.InFlight(action: flight.origin.action, actionID: flight.origin.id, actionType: flight.type, kind: kind)
            }
            let queued = shared.waiting.flatMap { type, waiting in
                waiting.elements.map {
                    Owner.InFlight(action: $0.origin.action, actionID: $0.origin.id, actionType: type, kind: .queued)
                }
            }
            return running + queued.sorted { $0.actionID < $1.actionID }
        }
    }

    var isIdle: Bool {
        shared.withLock { shared in
            !shared.draining && shared.actions.isEmpty && shared.arrivals.isEmpty && shared.flights.isEmpty
                && shared.waiting.values.allSatisfy(\.isEmpty)
        }
    }

    // MARK: Outputs (created on first use)

    var outputs: Outputs { Outputs(loop: self) }

    struct Outputs {
        let loop: InteractorLoop

        var actions: Signal<Traced<Action>> { loop.signal(\.actions, \.actions) }
        var mutations: Signal<Traced<Mutation>> { loop.signal(\.mutations, \.mutations) }
        var effects: Signal<Traced<Effect>> { loop.signal(\.effects, \.effects) }
        var errors: Signal<Failure> { loop.signal(\.errors, \.errors) }
    }

    private func signal<Value>(
        _ signal: WritableKeyPath<Signals, Signal<Value>?>, _ tap: WritableKeyPath<Taps, Observer<Value>?>
    ) -> Signal<Value> {
        let (made, input): (Signal<Value>, Observer<Value>?) = shared.withLock { shared in
            if let existing = shared.signals[keyPath: signal] { return (existing, nil) }
            let (output, input) = Signal<Value>.pipe()
            shared.signals[keyPath: signal] = output
            if shared.disposed { return (output, input) }
            shared.taps[keyPath: tap] = input
            return (output, nil)
        }
        input?.sendCompleted()   // asked for after disposal: already over
        return made
    }
}

extension FlattenStrategy {
    /// How many handler streams of one action type may run at once (1 for `.concat`).
    var concurrencyLimit: Int {
        if self == .concat { return 1 }
        if self == .merge { return .max }
        // `concurrent(N)`: the limit is only public through the description.
        let digits = description.filter(\.isNumber)
        return Int(digits) ?? 1
    }
}

/// Which thread is running the loop, checked in debug builds only.
struct LoopOwner {
    #if DEBUG
    private var thread: pthread_t?
    #endif

    @inline(__always)
    mutating func enter() {
        #if DEBUG
        precondition(thread == nil, "Interactor: two threads entered the loop at once")
        thread = pthread_self()
        #endif
    }

    @inline(__always)
    mutating func leave() {
        #if DEBUG
        thread = nil
        #endif
    }

    /// Traps when the calling thread is not the one running the loop.
    @inline(__always)
    func check() {
        #if DEBUG
        if let thread { precondition(pthread_equal(thread, pthread_self()) != 0, "Interactor: loop state touched off the loop's thread") }
        #endif
    }
}
