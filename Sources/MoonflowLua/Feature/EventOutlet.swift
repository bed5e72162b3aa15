import Foundation
import Streams
import Synchronization

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

    /// What the lock guards. A `Locked` (a POSIX mutex, inlined) rather than an `NSLock`:
    /// `send` takes it once or twice per action.
    private struct Guarded {
        var listeners: [Entry] = [] {
            didSet { wanted = listeners.reduce(into: []) { $0.formUnion($1.kinds) } }
        }
        /// The kinds some listener wants (the union of theirs).
        var wanted: FeatureEvent.Kinds = []
        var nextID = 0
        var finished = false
        var lazySignal: (signal: Signal<FeatureEvent>, input: Observer<FeatureEvent>)?
        var derived: [String: Any] = [:]
    }
    private let guarded = Locked(Guarded())
    /// `wanted`'s bits, stored under the lock whenever the listeners change and read
    /// without it: an event no one wants costs one load, not a lock.
    private let wantedBits = Atomic<UInt8>(0)

    /// Changes the listeners under the lock and publishes what they want.
    private func changingListeners<R>(_ body: (inout Guarded) -> R) -> R {
        guarded.withLock { g in
            let result = body(&g)
            wantedBits.store(g.wanted.rawValue, ordering: .releasing)
            return result
        }
    }

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
    public func add(
        kinds: FeatureEvent.Kinds = .all, _ listener: @escaping Listener, onFinish: (@Sendable () -> Void)? = nil
    ) -> Disposable {
        let id: Int? = changingListeners { g in
            if g.finished { return nil }
            let id = g.nextID
            g.nextID += 1
            g.listeners.append(Entry(id: id, kinds: kinds, listener: listener, onFinish: onFinish))
            return id
        }
        guard let id else {
            onFinish?()
            return AnyDisposable {}
        }
        return AnyDisposable { [weak self] in
            self?.changingListeners { $0.listeners.removeAll { $0.id == id } }
        }
    }

    /// How many listeners are attached (tests check that observations do not pile up).
    package var listenerCount: Int { guarded.withLock { $0.listeners.count } }

    /// Whether the outlet has finished (its feature was disposed or released).
    package var isFinished: Bool { guarded.withLock { $0.finished } }

    /// The events as a hot signal (made on first use; completed when the outlet finishes).
    public var signal: Signal<FeatureEvent> {
        let (made, isFinished): ((signal: Signal<FeatureEvent>, input: Observer<FeatureEvent>), Bool?) =
            guarded.withLock { g in
                if let s = g.lazySignal { return (s, nil) }
                let (output, input) = Signal<FeatureEvent>.pipe()
                g.lazySignal = (output, input)
                return ((output, input), g.finished)
            }
        // Made just now: fed from here on (or completed at once).
        if let isFinished {
            let input = made.input
            if isFinished { input.sendCompleted() } else { add { input.send(value: $0) } }
        }
        return made.signal
    }

    /// A value made from the outlet once and kept (the derived signals of a feature),
    /// so that reading it again attaches nothing new.
    package func derived<T>(_ key: String, _ make: () -> T) -> T {
        if let existing = guarded.withLock({ $0.derived[key] as? T }) { return existing }
        let made = make()
        return guarded.withLock { g in
            if let existing = g.derived[key] as? T { return existing }
            g.derived[key] = made
            return made
        }
    }

    /// Whether some listener wants events of `kind` (read on the state executor
    /// before making an event that costs something to make).
    package func wants(_ kind: FeatureEvent.Kinds) -> Bool {
        FeatureEvent.Kinds(rawValue: wantedBits.load(ordering: .acquiring)).contains(kind)
    }

    package func send(_ event: FeatureEvent) {
        send(event.kind, event)
    }

    /// Sends the event `make` builds, of `kind`, building it only when some listener
    /// wants that kind: an unheard event (a state no one observes) costs no copy.
    package func send(_ kind: FeatureEvent.Kinds, _ make: @autoclosure () -> FeatureEvent) {
        guard wants(kind), let current = guarded.withLock({ $0.wanted.contains(kind) ? $0.listeners : nil }) else {
            return
        }
        let event = make()
        for entry in current where entry.kinds.contains(kind) { entry.listener(event) }
    }

    /// Ends the outlet: listeners are removed and their `onFinish` called; the signal completes.
    package func finish() {
        let ending: (listeners: [Entry], input: Observer<FeatureEvent>?)? = changingListeners { g in
            guard !g.finished else { return nil }
            g.finished = true
            let current = g.listeners
            g.listeners = []
            g.derived = [:]
            return (current, g.lazySignal?.input)
        }
        guard let ending else { return }
        for entry in ending.listeners { entry.onFinish?() }
        ending.input?.sendCompleted()
    }
}
