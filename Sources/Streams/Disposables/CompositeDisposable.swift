/// A disposable that owns other disposables and disposes them all, in the order they were added.
///
/// Adding to a composite that is already disposed disposes the newcomer at once.
///
/// ```swift
/// let bag = CompositeDisposable()
/// bag += producerA.start()
/// bag += producerB.start()
/// bag.dispose()   // disposes both
/// ```
public final class CompositeDisposable: Disposable {
    /// Identifies one added disposable so it can be removed again without being disposed.
    public struct Token: Sendable, Hashable {
        fileprivate let id: Int
    }

    @usableFromInline
    struct State {
        @usableFromInline var isDisposed = false
        @usableFromInline var nextID = 0
        @usableFromInline var entries: [(id: Int, disposable: Disposable)] = []

        @inlinable init() {}
    }

    @usableFromInline
    let state = Locked(State())

    /// Creates an empty composite.
    @inlinable
    public init() {}

    /// Creates a composite owning `disposables`.
    ///
    /// - Parameter disposables: Disposed together with the composite.
    public init(_ disposables: [Disposable]) {
        for disposable in disposables { add(disposable) }
    }

    @inlinable
    public var isDisposed: Bool {
        state.withLock { $0.isDisposed }
    }

    /// Adds a disposable, or disposes it at once if the composite is already disposed.
    ///
    /// - Parameter disposable: What to own; `nil` is ignored.
    /// - Returns: A token for `remove(_:)`, or `nil` if nothing was added.
    @discardableResult
    public func add(_ disposable: Disposable?) -> Token? {
        guard let disposable, !disposable.isDisposed else { return nil }
        let token: Token? = state.withLock { state in
            guard !state.isDisposed else { return nil }
            let id = state.nextID
            state.nextID += 1
            state.entries.append((id, disposable))
            return Token(id: id)
        }
        if token == nil { disposable.dispose() }
        return token
    }

    /// Adds a teardown closure, or runs it at once if the composite is already disposed.
    ///
    /// - Parameter action: Runs when the composite is disposed.
    /// - Returns: A token for `remove(_:)`, or `nil` if the action ran already.
    @discardableResult
    public func add(_ action: @escaping @Sendable () -> Void) -> Token? {
        add(AnyDisposable(action))
    }

    /// Forgets an added disposable without disposing it.
    ///
    /// - Parameter token: What `add(_:)` returned.
    public func remove(_ token: Token) {
        state.withLock { state in
            if let index = state.entries.firstIndex(where: { $0.id == token.id }) {
                state.entries.remove(at: index)
            }
        }
    }

    public func dispose() {
        tryDispose()
    }

    /// Disposes the composite and says whether this call did it, so racing callers can tell who
    /// won (the stream guard uses it to let exactly one terminal event through).
    @usableFromInline
    @discardableResult
    func tryDispose() -> Bool {
        let entries: [(id: Int, disposable: Disposable)]? = state.withLock { state in
            guard !state.isDisposed else { return nil }
            state.isDisposed = true
            defer { state.entries = [] }
            return state.entries
        }
        guard let entries else { return false }
        for entry in entries { entry.disposable.dispose() }
        return true
    }

    /// Adds `disposable` to `composite`.
    ///
    /// - Parameters:
    ///   - composite: The owner.
    ///   - disposable: What it should own.
    public static func += (composite: CompositeDisposable, disposable: Disposable?) {
        composite.add(disposable)
    }
}
