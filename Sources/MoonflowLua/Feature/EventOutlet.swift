import Foundation
import Streams

/// Where a feature's events go: a plain list of listeners called in order, so
/// the per-action cost is a loop over closures. `signal` is made on first use
/// for those who want the stream operators.
///
/// When the feature is disposed or released the outlet finishes: every
/// listener is removed and told (`onFinish`), and the signal completes, so
/// `for await` loops over a feature's streams end.
///
/// **Threading:** `send` runs on the host's state executor only; adding and
/// removing listeners and finishing may happen from any thread.
public final class EventOutlet: @unchecked Sendable {
    public typealias Listener = @Sendable (FeatureEvent) -> Void

    private struct Entry {
        let id: Int
        let kinds: FeatureEvent.Kinds
        let listener: Listener
        let onFinish: (@Sendable () -> Void)?
    }

    private let lock = NSLock()
    private var listeners: [Entry] = [] {
        didSet { wanted = listeners.reduce(into: []) { $0.formUnion($1.kinds) } }
    }
    /// The kinds some listener wants (the union of theirs).
    private var wanted: FeatureEvent.Kinds = []
    private var nextID = 0
    private var finished = false
    private var lazySignal: (signal: Signal<FeatureEvent>, input: Observer<FeatureEvent>)?
    private var derived: [String: Any] = [:]

    public init() {}

    /// Calls `listener` with every event of `kinds` from now on, and `onFinish`
    /// once the outlet finishes (at once if it already has).
    ///
    ///     feature.outlet.add(kinds: .state) { event in ... }   // mutations stay in Lua
    ///
    /// - Parameter kinds: the events wanted (all by default). An observer that
    ///   wants only states lets the feature skip copying each mutation out of Lua.
    /// - Returns: a disposable that removes the listener (`onFinish` is then not called).
    @discardableResult
    public func add(kinds: FeatureEvent.Kinds = .all, _ listener: @escaping Listener, onFinish: (@Sendable () -> Void)? = nil) -> Disposable {
        lock.lock()
        if finished {
            lock.unlock()
            onFinish?()
            return AnyDisposable {}
        }
        let id = nextID
        nextID += 1
        listeners.append(Entry(id: id, kinds: kinds, listener: listener, onFinish: onFinish))
        lock.unlock()
        return AnyDisposable { [weak self] in
            guard let self else { return }
            self.lock.lock()
            self.listeners.removeAll { $0.id == id }
            self.lock.unlock()
        }
    }

    /// How many listeners are attached (tests check that observations do not pile up).
    public var listenerCount: Int { lock.withLock { listeners.count } }

    /// Whether the outlet has finished (its feature was disposed or released).
    public var isFinished: Bool { lock.withLock { finished } }

    /// The events as a hot signal (made on first use; completed when the outlet finishes).
    public var signal: Signal<FeatureEvent> {
        lock.lock()
        if let s = lazySignal { lock.unlock(); return s.signal }
        let (output, input) = Signal<FeatureEvent>.pipe()
        lazySignal = (output, input)
        let isFinished = finished
        lock.unlock()
        if isFinished { input.sendCompleted() } else { add { input.send(value: $0) } }
        return output
    }

    /// A value made from the outlet once and kept (the derived signals of a feature),
    /// so that reading it again attaches nothing new.
    public func derived<T>(_ key: String, _ make: () -> T) -> T {
        lock.lock()
        if let existing = derived[key] as? T { lock.unlock(); return existing }
        lock.unlock()
        let made = make()
        lock.lock()
        defer { lock.unlock() }
        if let existing = derived[key] as? T { return existing }
        derived[key] = made
        return made
    }

    /// Whether some listener wants events of `kind` (read on the state executor
    /// before making an event that costs something to make).
    package func wants(_ kind: FeatureEvent.Kinds) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return wanted.contains(kind)
    }

    package func send(_ event: FeatureEvent) {
        send(event.kind, event)
    }

    /// Sends the event `make` builds, of `kind`, building it only when some listener
    /// wants that kind: an unheard event (a state no one observes) costs no copy.
    package func send(_ kind: FeatureEvent.Kinds, _ make: @autoclosure () -> FeatureEvent) {
        lock.lock()
        guard wanted.contains(kind) else { lock.unlock(); return }
        let current = listeners
        lock.unlock()
        let event = make()
        for entry in current where entry.kinds.contains(kind) { entry.listener(event) }
    }

    /// Ends the outlet: listeners are removed and their `onFinish` called; the signal completes.
    package func finish() {
        lock.lock()
        guard !finished else { lock.unlock(); return }
        finished = true
        let current = listeners
        listeners = []
        let input = lazySignal?.input
        derived = [:]
        lock.unlock()
        for entry in current { entry.onFinish?() }
        input?.sendCompleted()
    }
}
