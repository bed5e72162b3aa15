/// A disposable that holds one replaceable inner disposable; replacing it disposes the old one.
///
/// Used for "only the latest subscription lives" logic such as `flatMap(.latest)`.
///
/// ```swift
/// let current = SerialDisposable()
/// current.inner = first.start()
/// current.inner = second.start()   // disposes the first subscription
/// current.dispose()                // disposes the second
/// ```
public final class SerialDisposable: Disposable {
    private struct State {
        var isDisposed = false
        var inner: Disposable?
    }

    private let state = Locked(State())

    /// Creates a serial disposable, optionally holding `inner`.
    ///
    /// - Parameter inner: The first inner disposable.
    public init(_ inner: Disposable? = nil) {
        self.inner = inner
    }

    public var isDisposed: Bool {
        state.withLock { $0.isDisposed }
    }

    /// The current inner disposable; setting it disposes the previous one, and once the serial
    /// disposable itself is disposed, anything set here is disposed at once.
    public var inner: Disposable? {
        get { state.withLock { $0.inner } }
        set {
            let (old, rejected): (Disposable?, Bool) = state.withLock { state in
                if state.isDisposed { return (nil, true) }
                defer { state.inner = newValue }
                return (state.inner, false)
            }
            old?.dispose()
            if rejected { newValue?.dispose() }
        }
    }

    public func dispose() {
        let old: Disposable? = state.withLock { state in
            guard !state.isDisposed else { return nil }
            state.isDisposed = true
            defer { state.inner = nil }
            return state.inner
        }
        old?.dispose()
    }
}
