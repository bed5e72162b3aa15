/// The span during which a subscription (or an object) is alive; resources tied to it are torn
/// down when it ends.
///
/// A `Producer`'s start closure receives the lifetime of its subscription: whatever it adds is
/// disposed when the subscriber disposes or when the stream terminates.
///
/// ```swift
/// let ticks = Producer<Int> { observer, lifetime in
///     lifetime += scheduler.schedule(after: 10, interval: 10) { observer.send(value: 1) }
///     lifetime.observeEnded { print("stopped") }
/// }
/// ```
public struct Lifetime: Sendable {
    @usableFromInline
    let disposables: CompositeDisposable

    /// Creates a lifetime that ends when `disposables` is disposed.
    ///
    /// - Parameter disposables: Disposing it ends the lifetime.
    @inlinable
    public init(_ disposables: CompositeDisposable) {
        self.disposables = disposables
    }

    /// Whether the lifetime has ended.
    @inlinable
    public var hasEnded: Bool {
        disposables.isDisposed
    }

    /// Runs `action` when the lifetime ends, or at once if it already has.
    ///
    /// - Parameter action: The teardown.
    /// - Returns: A token that removes the action from the lifetime without running it.
    @discardableResult
    public func observeEnded(_ action: @escaping @Sendable () -> Void) -> CompositeDisposable.Token? {
        disposables.add(action)
    }

    /// Ties `disposable` to the lifetime: it is disposed when the lifetime ends, or at once if
    /// it already has.
    ///
    /// - Parameter disposable: What to dispose when the lifetime ends; `nil` is ignored.
    /// - Returns: A token for `remove(_:)`.
    @discardableResult
    public func add(_ disposable: Disposable?) -> CompositeDisposable.Token? {
        disposables.add(disposable)
    }

    /// Unties a disposable added with `add(_:)` without disposing it.
    ///
    /// - Parameter token: What `add(_:)` returned.
    public func remove(_ token: CompositeDisposable.Token) {
        disposables.remove(token)
    }

    /// Ties `disposable` to `lifetime`.
    ///
    /// - Parameters:
    ///   - lifetime: The owner.
    ///   - disposable: Disposed when the lifetime ends.
    public static func += (lifetime: Lifetime, disposable: Disposable?) {
        lifetime.disposables.add(disposable)
    }

    /// Makes a lifetime that ends when the returned token is deinitialized or disposed, for tying
    /// subscriptions to an object: store the token in the object.
    ///
    /// ```swift
    /// final class ViewModel {
    ///     let (lifetime, token) = Lifetime.make()
    /// }
    /// ```
    ///
    /// - Returns: The lifetime and the token that controls it.
    public static func make() -> (lifetime: Lifetime, token: Token) {
        let token = Token()
        return (Lifetime(token.disposables), token)
    }

    /// A lifetime that has already ended.
    public static var ended: Lifetime {
        let disposables = CompositeDisposable()
        disposables.dispose()
        return Lifetime(disposables)
    }

    /// Ends its lifetime when deinitialized or disposed.
    public final class Token: Disposable {
        fileprivate let disposables = CompositeDisposable()

        public var isDisposed: Bool { disposables.isDisposed }

        /// Ends the lifetime now.
        public func dispose() { disposables.dispose() }

        deinit { disposables.dispose() }
    }
}
