/// Something that can be torn down once: a subscription, a scheduled action, a resource.
///
/// Disposing twice is harmless; only the first call does anything.
///
/// ```swift
/// let subscription = Producer.interval(100, on: scheduler).start(value: { print($0) })
/// subscription.dispose()   // stops the timer, no further events
/// ```
public protocol Disposable: AnyObject, Sendable {
    /// Whether `dispose()` has run.
    var isDisposed: Bool { get }

    /// Tears the resource down; later calls do nothing.
    func dispose()
}

/// A disposable that runs a closure when it is first disposed.
///
/// ```swift
/// let disposable = AnyDisposable { print("torn down") }
/// disposable.dispose()   // prints once
/// disposable.dispose()   // nothing
/// ```
public final class AnyDisposable: Disposable {
    private let state: Locked<State>

    private struct State {
        var isDisposed = false
        var action: (@Sendable () -> Void)?
    }

    /// Creates a disposable that runs `action` on its first disposal.
    ///
    /// - Parameter action: The teardown; runs at most once, on the disposing thread.
    public init(_ action: @escaping @Sendable () -> Void) {
        state = Locked(State(action: action))
    }

    /// Creates a disposable that only records whether it was disposed.
    public init() {
        state = Locked(State())
    }

    public var isDisposed: Bool {
        state.withLock { $0.isDisposed }
    }

    public func dispose() {
        let action: (@Sendable () -> Void)? = state.withLock { state in
            guard !state.isDisposed else { return nil }
            state.isDisposed = true
            defer { state.action = nil }
            return state.action
        }
        action?()
    }
}
