import Streams

/// An observation: cancel it, or release it, and it stops.
public final class ObservationToken: Sendable {
    private let disposable: Disposable

    init(_ disposable: Disposable) { self.disposable = disposable }

    public func cancel() { disposable.dispose() }

    deinit { disposable.dispose() }
}
