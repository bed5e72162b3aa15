import Streams

/// A parent feature over named children, for features written in Swift: routes its actions to
/// them, folds their states into its own, and merges their outward effects tagged with the child's
/// name (seed 000's `UserInteractor`, seed 001's reducer over child states). Lua's `mf.compose`
/// is `LuaComposite` (MoonflowLua), which does the same over Lua features and can also be
/// reloaded with its children's states kept; the two share the contract, not the code, because
/// the Lua one must run every `route` and `combine` on the state executor.
///
///     let user = Composite<UserAction, UserViewModel, UserAction, UserPart, Never>(
///         children: [("profile", profile), ("posts", posts)],
///         route: { action in action == .loadProfile ? ("profile", action) : ("posts", action) },
///         combine: { parts in UserViewModel(parts) })
///     user.send(.loadPosts)
///     user.add("comments", comments)      // children can come and go at run time
///     user.remove("posts")                // ...and a removed child's effects are cancelled
///
/// **Threading**: every member is callable from any thread. State folds and effect deliveries run
/// one at a time in arrival order; `combine` and `mapEffect` run there, never concurrently.
public final class Composite<Action: Sendable, State: Sendable, ChildAction: Sendable, ChildState: Sendable, ChildEffect: Sendable>: Disposable {
    public typealias Child = AnyChild<ChildAction, ChildState, ChildEffect>

    /// A child's value with the child's name.
    public struct Tagged<Value: Sendable>: Sendable {
        /// The child's name.
        public let child: String
        public let value: Value
    }

    /// Why an action or a child failed; none of these ends the composite.
    public enum Failure: Error, Sendable, CustomStringConvertible {
        /// `route` sent the action nowhere.
        case unrouted(Action)
        /// `route` named a child that is not there (or that refused the action).
        case unknownChild(String, Action)
        /// A child reported an error.
        case child(String, any Error)

        public var description: String {
            switch self {
            case .unrouted(let action): "no child takes action \(action); extend `route`"
            case .unknownChild(let name, let action): "action \(action) routed to child \"\(name)\", which is not there or refused it"
            case .child(let name, let error): "child \"\(name)\": \(error)"
            }
        }
    }

    private struct Entry {
        let child: Child
        let subscriptions: CompositeDisposable
    }

    private struct Shared {
        var order: [String] = []
        var children: [String: Entry] = [:]
        var states: [String: ChildState] = [:]
        var disposed = false
    }

    /// The folded state; recomputed with `combine` whenever a child's state changes or the set of
    /// children changes.
    public let state: Property<State>
    /// Children's outward effects, tagged with the child's name (after `mapEffect`).
    public let effects: Signal<Tagged<ChildEffect>>
    /// Routing failures and children's errors.
    public let errors: Signal<Failure>

    private let effectsInput: Observer<Tagged<ChildEffect>>
    private let errorsInput: Observer<Failure>
    private let property: MutableProperty<State>
    private let route: @Sendable (Action) -> (child: String, action: ChildAction)?
    private let combine: @Sendable ([String: ChildState]) -> State
    private let mapEffect: @Sendable (String, ChildEffect) -> ChildEffect?
    private let shared = Locked(Shared())
    private let serial = SerialQueue()

    /// Creates a composite.
    ///
    /// - Parameters:
    ///   - children: The initial children, by name, in order.
    ///   - route: The child and child action for a parent action, or nil when none takes it.
    ///   - combine: Folds the children's latest states (by name) into the parent's state.
    ///   - mapEffect: Replaces a child's effect, or drops it with nil; by default effects go out unchanged.
    public init(
        children: [(String, Child)] = [],
        route: @escaping @Sendable (Action) -> (child: String, action: ChildAction)?,
        combine: @escaping @Sendable ([String: ChildState]) -> State,
        mapEffect: @escaping @Sendable (String, ChildEffect) -> ChildEffect? = { $1 }
    ) {
        self.route = route
        self.combine = combine
        self.mapEffect = mapEffect
        (effects, effectsInput) = Signal.pipe()
        (errors, errorsInput) = Signal.pipe()
        var states: [String: ChildState] = [:]
        for (name, child) in children { states[name] = child.state.value }
        property = MutableProperty(combine(states))
        state = Property(property)
        for (name, child) in children { add(name, child) }
    }

    deinit { dispose() }

    /// Routes an action to its child; a routing failure goes to `errors`.
    ///
    /// - Parameter action: The parent action.
    public func send(_ action: Action) {
        guard let (name, childAction) = route(action) else {
            errorsInput.send(value: .unrouted(action))
            return
        }
        guard let child = shared.withLock({ $0.children[name]?.child }), child.send(childAction) else {
            errorsInput.send(value: .unknownChild(name, action))
            return
        }
    }

    /// Adds a child (replacing and disposing one of the same name) and refolds the state.
    ///
    /// - Parameters:
    ///   - name: The child's name, used by `route`, `combine` and effect tags.
    ///   - child: The child.
    public func add(_ name: String, _ child: Child) {
        let subscriptions = CompositeDisposable()
        let replaced: Entry?? = shared.withLock { shared in
            guard !shared.disposed else { return .none }
            if shared.children[name] == nil { shared.order.append(name) }
            return .some(shared.children.updateValue(Entry(child: child, subscriptions: subscriptions), forKey: name))
        }
        guard case .some(let old) = replaced else {
            child.dispose()   // added after disposal
            return
        }
        if let old {
            old.subscriptions.dispose()
            old.child.dispose()
        }
        let effectsInput = self.effectsInput
        let errorsInput = self.errorsInput
        let mapEffect = self.mapEffect
        subscriptions += child.state.producer.start(value: { [weak self] value in
            self?.serial.run { [weak self] in
                self?.refold { shared in
                    // A value that was on its way when the child was removed or replaced is dropped.
                    if shared.children[name]?.child === child { shared.states[name] = value }
                }
            }
        })
        subscriptions += child.effects.start(value: { [weak self] effect in
            self?.serial.run {
                if let mapped = mapEffect(name, effect) { effectsInput.send(value: Tagged(child: name, value: mapped)) }
            }
        })
        subscriptions += child.errors.start(value: { error in errorsInput.send(value: .child(name, error)) })
    }

    /// Removes a child, cancels its effects (disposes it) and refolds the state.
    ///
    /// - Parameter name: The child's name; unknown names are ignored.
    public func remove(_ name: String) {
        let entry: Entry? = shared.withLock { shared in
            guard let entry = shared.children.removeValue(forKey: name) else { return nil }
            shared.order.removeAll { $0 == name }
            return entry
        }
        guard let entry else { return }
        entry.subscriptions.dispose()
        entry.child.dispose()
        serial.run { [self] in refold { $0.states[name] = nil } }
    }

    /// The children's names, in the order they were added.
    public var childNames: [String] { shared.withLock { $0.order } }

    /// The child with this name.
    public func child(_ name: String) -> Child? { shared.withLock { $0.children[name]?.child } }

    /// Each child's actions whose work is still running, by child name in order.
    public var inFlight: [(child: String, actions: [String])] {
        let children = shared.withLock { shared in shared.order.compactMap { name in shared.children[name].map { (name, $0.child) } } }
        return children.map { ($0.0, $0.1.inFlight) }.filter { !$0.actions.isEmpty }
    }

    /// Cancels every child's work in flight.
    public func cancelAll() {
        shared.withLock { $0.children.values.map(\.child) }.forEach { $0.cancelAll() }
    }

    public var isDisposed: Bool { shared.withLock { $0.disposed } }

    /// Disposes every child and completes `effects` and `errors`.
    public func dispose() {
        let entries: [Entry]? = shared.withLock { shared in
            guard !shared.disposed else { return nil }
            shared.disposed = true
            defer { shared.children = [:]; shared.order = [] }
            return shared.order.compactMap { shared.children[$0] }
        }
        guard let entries else { return }
        for entry in entries {
            entry.subscriptions.dispose()
            entry.child.dispose()
        }
        effectsInput.sendCompleted()
        errorsInput.sendCompleted()
    }

    /// Applies `change` to the children's states and publishes the new fold (on `serial` only).
    private func refold(_ change: (inout Shared) -> Void) {
        let states: [String: ChildState]? = shared.withLock { shared in
            change(&shared)
            return shared.disposed ? nil : shared.states
        }
        guard let states else { return }
        property.value = combine(states)
    }
}
