/// A value that changes over time and can be set; observers see every change in order.
///
/// Setting is thread-safe. Observers run while the property's recursive lock is held, so an
/// observer may read or set the property (a set from inside an observer is delivered after the
/// current delivery ends), but observers must not block waiting for other threads that touch it.
///
/// ```swift
/// let query = MutableProperty("")
/// query.changes.start(value: { print("now", $0) })
/// query.value = "moon"                    // now moon
/// query.modify { $0 += "flow" }          // now moonflow
/// ```
public final class MutableProperty<Value: Sendable>: Sendable {
    @usableFromInline let storage: PropertyStorage<Value>

    /// Creates a property holding `initial`.
    ///
    /// - Parameter initial: The first value.
    public init(_ initial: Value) {
        storage = PropertyStorage(initial)
    }

    deinit {
        storage.complete()
    }

    /// The current value; setting it notifies observers.
    /// (Inlinable: a caller that knows `Value` sets it without generic metadata lookups.)
    public var value: Value {
        @inlinable get { storage.value }
        @inlinable set { storage.set(newValue) }
    }

    /// Changes the value in place, atomically, and notifies observers once.
    ///
    /// - Parameter body: Receives the value to change.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws; the value is then left as `body` left it and observers are
    ///   not notified.
    @discardableResult
    public func modify<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try storage.modify(body)
    }

    /// The changes from the moment of subscription on, without the current value.
    public var changes: Producer<Value> {
        storage.changes
    }

    /// The current value followed by every change.
    public var producer: Producer<Value> {
        storage.producer
    }
}

/// The state shared by a `MutableProperty` and its read-only views.
///
/// Every access holds `lock`, a recursive lock that stays held while observers run, so changes
/// reach every observer in order and observers may read or set the property. The observers are
/// kept here, not in a `Signal`: the lock already orders deliveries, so a change costs one lock
/// and a call per observer. A set or a completion from inside an observer is queued and
/// delivered, by the delivering thread, once the current delivery ends.
@usableFromInline
final class PropertyStorage<Value: Sendable>: @unchecked Sendable {
    /// One observer, and from which version on it takes changes (a subscriber added during a
    /// delivery has been sent the latest value already). `isActive` is read and changed only
    /// under the storage's lock.
    @usableFromInline
    final class Subscriber: @unchecked Sendable {
        @usableFromInline let observer: Observer<Value>
        @usableFromInline let seen: Int
        @usableFromInline @exclusivity(unchecked) var isActive = true
        init(_ observer: Observer<Value>, seen: Int) {
            self.observer = observer
            self.seen = seen
        }
    }

    /// What a delivery hands on: a new value, or the end.
    private enum Pending {
        case change(version: Int, value: Value)
        case completed
    }

    // Every var below is read and written only under `lock`, which already makes each access
    // exclusive: the runtime's own exclusivity checks (a thread-local access set per read or
    // write) would cost a delivery more than its lock does, so they are turned off here.
    @usableFromInline let lock = RecursiveLock()
    @usableFromInline @exclusivity(unchecked) var current: Value?
    @usableFromInline @exclusivity(unchecked) var version = 0
    /// Replaced whole when it changes, so a delivery walks the list it started with.
    @usableFromInline @exclusivity(unchecked) var subscribers: [Subscriber] = []
    @usableFromInline @exclusivity(unchecked) var isCompleted = false
    @usableFromInline @exclusivity(unchecked) var isDelivering = false
    @exclusivity(unchecked) private var queued: [Pending] = []
    /// Whether `queued` holds anything (read without touching the generic array).
    @usableFromInline @exclusivity(unchecked) var hasQueued = false

    init(_ initial: Value?) {
        current = initial
    }

    var hasValue: Bool {
        lock.withLock { current != nil }
    }

    @inlinable
    var value: Value {
        lock.withLock { current! }
    }

    /// Replaces the value (also the first value of a derived property) and notifies observers.
    /// Inlinable, so the common case is specialized where `Value` is known.
    @inlinable
    func set(_ value: Value) {
        lock.withLock {
            current = value
            version += 1
            guard isDelivering || isCompleted else {
                // The common case, without a queue: straight to the observers.
                isDelivering = true
                let version = version
                for subscriber in subscribers where subscriber.isActive && subscriber.seen < version {
                    subscriber.observer.send(value: value)
                }
                // Only an observer that set the property or completed it queued anything.
                if hasQueued { drainQueue() } else { isDelivering = false }
                return
            }
            deliverChange(value)
        }
    }

    /// Under the lock: the latest change, delivered or queued (the uncommon case of `set`).
    @usableFromInline
    func deliverChange(_ value: Value) {
        deliver(.change(version: version, value: value))
    }

    func modify<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try lock.withLock {
            var value = current!
            let result: Result
            do {
                result = try body(&value)
            } catch {
                current = value
                throw error
            }
            current = value
            version += 1
            deliver(.change(version: version, value: value))
            return result
        }
    }

    func complete() {
        lock.withLock { deliver(.completed) }
    }

    /// Under the lock: hands `event` to the observers, or queues it behind the delivery
    /// running now on this thread (an observer set the property or completed it).
    private func deliver(_ event: Pending) {
        guard !isCompleted else { return }
        if case .completed = event { isCompleted = true }
        if isDelivering {
            queued.append(event)
            hasQueued = true
            return
        }
        isDelivering = true
        send(event)
        drainQueue()
    }

    /// Under the lock, while delivering: what observers queued meanwhile, in order.
    @usableFromInline
    func drainQueue() {
        while hasQueued {
            let next = queued.removeFirst()
            hasQueued = !queued.isEmpty
            send(next)
        }
        isDelivering = false
    }

    /// Under the lock, while delivering: `event` to every observer there is now.
    private func send(_ event: Pending) {
        let targets = subscribers
        switch event {
        case .change(let version, let value):
            for subscriber in targets where subscriber.isActive && subscriber.seen < version {
                subscriber.observer.send(value: value)
            }
        case .completed:
            subscribers = []
            for subscriber in targets where subscriber.isActive {
                subscriber.isActive = false
                subscriber.observer.sendCompleted()
            }
        }
    }

    /// Under the lock: adds `observer` for the changes after `seen`; nil (and `completed` sent)
    /// when the property has ended.
    private func subscribe(_ observer: Observer<Value>, seen: Int) -> Disposable? {
        if isCompleted {
            observer.sendCompleted()
            return nil
        }
        let subscriber = Subscriber(observer, seen: seen)
        subscribers.append(subscriber)
        return AnyDisposable { [weak self] in
            guard let self else { return }
            self.lock.withLock {
                subscriber.isActive = false
                self.subscribers.removeAll { $0 === subscriber }
            }
        }
    }

    var changes: Producer<Value> {
        Producer { observer, lifetime in
            self.lock.withLock {
                lifetime += self.subscribe(observer, seen: self.version)
            }
        }
    }

    var producer: Producer<Value> {
        Producer { observer, lifetime in
            self.lock.withLock {
                let sent = self.version
                if let value = self.current { observer.send(value: value) }
                // An observer may have set the property while receiving the current value; it
                // was not subscribed yet, so catch it up with the latest value.
                let seen = self.version
                lifetime += self.subscribe(observer, seen: seen)
                if seen != sent, let value = self.current { observer.send(value: value) }
            }
        }
    }
}
