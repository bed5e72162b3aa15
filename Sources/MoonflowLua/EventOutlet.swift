import Foundation
import Streams

/// Where a feature's events go: a plain list of listeners called in order, so
/// the per-action cost is a loop over closures. `signal` is made on first use
/// for those who want the stream operators.
///
/// **Threading:** `send` runs on the host's state executor only; adding and
/// removing listeners may happen from any thread.
public final class EventOutlet: @unchecked Sendable {
    public typealias Listener = @Sendable (FeatureEvent) -> Void

    private let lock = NSLock()
    private var listeners: [(id: Int, listener: Listener)] = []
    private var nextID = 0
    private var lazySignal: Signal<FeatureEvent>?

    public init() {}

    /// Calls `listener` with every event from now on.
    /// - Returns: a disposable that removes it.
    @discardableResult
    public func add(_ listener: @escaping Listener) -> Disposable {
        lock.lock()
        let id = nextID
        nextID += 1
        listeners.append((id, listener))
        lock.unlock()
        return AnyDisposable { [weak self] in
            guard let self else { return }
            self.lock.lock()
            self.listeners.removeAll { $0.id == id }
            self.lock.unlock()
        }
    }

    /// The events as a hot signal.
    public var signal: Signal<FeatureEvent> {
        lock.lock()
        if let s = lazySignal { lock.unlock(); return s }
        let (output, input) = Signal<FeatureEvent>.pipe()
        lazySignal = output
        lock.unlock()
        add { input.send(value: $0) }
        return output
    }

    package func send(_ event: FeatureEvent) {
        lock.lock()
        let current = listeners
        lock.unlock()
        for (_, listener) in current { listener(event) }
    }
}
