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
    let storage: PropertyStorage<Value>

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
    public var value: Value {
        get { storage.value }
        set { storage.set(newValue) }
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
/// reach every observer in order and observers may read or set the property.
final class PropertyStorage<Value: Sendable>: @unchecked Sendable {
    struct Change: Sendable {
        let version: Int
        let value: Value
    }

    private let lock = RecursiveLock()
    private var current: Value?
    private var version = 0
    private let output: Signal<Change>
    private let input: Observer<Change>

    init(_ initial: Value?) {
        current = initial
        (output, input) = Signal<Change>.pipe()
    }

    var hasValue: Bool {
        lock.withLock { current != nil }
    }

    var value: Value {
        lock.withLock { current! }
    }

    /// Replaces the value (also the first value of a derived property) and notifies observers.
    func set(_ value: Value) {
        lock.withLock {
            current = value
            version += 1
            input.send(value: Change(version: version, value: value))
        }
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
            input.send(value: Change(version: version, value: value))
            return result
        }
    }

    func complete() {
        input.sendCompleted()
    }

    var changes: Producer<Value> {
        output.producer.map(\.value)
    }

    var producer: Producer<Value> {
        Producer { observer, lifetime in
            self.lock.withLock {
                let sent = self.version
                if let value = self.current { observer.send(value: value) }
                // An observer may have set the property while receiving the current value; it
                // was not subscribed yet, so catch it up with the latest value.
                let seen = self.version
                lifetime += self.output.observe(Observer { event in
                    switch event {
                    case .value(let change): if change.version > seen { observer.send(value: change.value) }
                    case .failed(let error): observer.sendFailed(error)
                    case .completed: observer.sendCompleted()
                    case .interrupted: observer.sendInterrupted()
                    }
                })
                if seen != sent, let value = self.current { observer.send(value: value) }
            }
        }
    }
}
