import Streams

/// A child feature as a `Composite` sees it, with its types erased to the composite's child types.
///
///     let profile = AnyChild(profileInteractor,
///         action: { (action: UserAction) in action == .loadProfile ? .load : nil },
///         state: { UserPart.profile($0) })
///
/// Build one from an `Interactor` with `init(_:action:state:effect:)`, or from closures (any other
/// feature) with `init(send:state:effects:errors:inFlight:cancelAll:dispose:)`.
///
/// **Threading**: as the wrapped feature; an `Interactor`'s members are callable from any thread.
public final class AnyChild<Action: Sendable, State: Sendable, Effect: Sendable>: Sendable {
    /// The child's state, in the composite's child-state type.
    public let state: Property<State>
    /// The child's outward effects.
    public let effects: Producer<Effect>
    /// The child's errors (they do not end it).
    public let errors: Producer<any Error>
    private let sendAction: @Sendable (Action) -> Bool
    private let inFlightActions: @Sendable () -> [String]
    private let cancelAllAction: @Sendable () -> Void
    private let disposeAction: @Sendable () -> Void

    /// Wraps any feature given as closures.
    ///
    /// - Parameters:
    ///   - send: Delivers an action; returns false when the child does not accept it.
    ///   - state: The child's state.
    ///   - effects: The child's outward effects.
    ///   - errors: The child's errors.
    ///   - inFlight: Descriptions of the actions whose work is still running.
    ///   - cancelAll: Cancels the child's work in flight.
    ///   - dispose: Ends the child (cancels its effects); called when it is removed.
    public init(
        send: @escaping @Sendable (Action) -> Bool,
        state: Property<State>,
        effects: Producer<Effect> = .empty(),
        errors: Producer<any Error> = .empty(),
        inFlight: @escaping @Sendable () -> [String] = { [] },
        cancelAll: @escaping @Sendable () -> Void = {},
        dispose: @escaping @Sendable () -> Void = {}
    ) {
        self.sendAction = send
        self.state = state
        self.effects = effects
        self.errors = errors
        self.inFlightActions = inFlight
        self.cancelAllAction = cancelAll
        self.disposeAction = dispose
    }

    /// Wraps an interactor, mapping the composite's child types to and from the interactor's.
    ///
    /// - Parameters:
    ///   - interactor: The child; the `AnyChild` keeps it alive.
    ///   - action: The interactor's action for a child action, or nil when it does not accept it.
    ///   - state: The interactor's state as the composite's child state.
    ///   - effect: An outward effect as the composite's child effect, or nil to drop it.
    public convenience init<S, A, M, E>(
        _ interactor: Interactor<S, A, M, E>,
        action: @escaping @Sendable (Action) -> A?,
        state: @escaping @Sendable (S) -> State,
        effect: @escaping @Sendable (E) -> Effect? = { _ in nil }
    ) {
        let outward: Producer<Interactor<S, A, M, E>.Traced<E>> = interactor.effects.producer
        let effects = Producer<Effect> { observer, lifetime in
            lifetime += outward.start(Observer { event in
                switch event {
                case .value(let traced): if let mapped = effect(traced.value) { observer.send(value: mapped) }
                case .failed(let error): observer.sendFailed(error)
                case .completed: observer.sendCompleted()
                case .interrupted: observer.sendInterrupted()
                }
            })
        }
        let failures: Signal<Interactor<S, A, M, E>.Failure> = interactor.errors
        let errors = Producer<any Error> { observer, lifetime in
            lifetime += failures.observe(value: { failure in observer.send(value: failure) })
        }
        let send: @Sendable (Action) -> Bool = { child in
            guard let mapped = action(child) else { return false }
            interactor.send(mapped)
            return true
        }
        let inFlight: @Sendable () -> [String] = {
            interactor.inFlight.map { flight in "\(flight.actionType) #\(flight.actionID) (\(flight.action))" }
        }
        self.init(
            send: send, state: interactor.state.map(state), effects: effects, errors: errors, inFlight: inFlight,
            cancelAll: { interactor.cancelAll() }, dispose: { interactor.dispose() })
    }

    /// Wraps an interactor whose types are the composite's child types.
    public convenience init<M>(_ interactor: Interactor<State, Action, M, Effect>) {
        self.init(interactor, action: { $0 }, state: { $0 }, effect: { $0 })
    }

    /// Delivers `action`; returns false when the child does not accept it.
    @discardableResult
    public func send(_ action: Action) -> Bool { sendAction(action) }
    /// Descriptions of the child's actions whose work is still running.
    public var inFlight: [String] { inFlightActions() }
    /// Cancels the child's work in flight.
    public func cancelAll() { cancelAllAction() }
    /// Ends the child.
    public func dispose() { disposeAction() }
}
