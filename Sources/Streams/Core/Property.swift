/// A read-only value that changes over time: its current `value`, and streams of its changes.
///
/// A `Property` is either a view of a `MutableProperty`, a constant, or the latest value of a
/// producer. Observers are called while the property's (recursive) lock is held, so every
/// observer sees the values in order and a producer's current value is never missed nor
/// duplicated; an observer may read or set the property it observes.
///
/// ```swift
/// let count = MutableProperty(0)
/// let readOnly = Property(count)
/// readOnly.producer.start(value: { print($0) })   // 0
/// count.value = 1                                 // 1
/// ```
public final class Property<Value: Sendable>: Sendable {
    let storage: PropertyStorage<Value>
    private let subscription: Disposable?

    /// Creates a read-only view of `property`.
    ///
    /// - Parameter property: The mutable property to mirror.
    public init(_ property: MutableProperty<Value>) {
        storage = property.storage
        subscription = nil
    }

    /// Creates a property that never changes.
    ///
    /// - Parameter value: The constant value.
    public init(value: Value) {
        storage = PropertyStorage(value)
        storage.complete()
        subscription = nil
    }

    /// Creates a property that starts at `initial` and then takes every value of `producer`,
    /// which is started at once and disposed with the property.
    ///
    /// ```swift
    /// let latest = Property(initial: 0, then: Producer.interval(1000, on: scheduler))
    /// ```
    ///
    /// - Parameters:
    ///   - initial: The value until `producer` sends one.
    ///   - producer: The source of later values; when it terminates, `changes` completes.
    public init(initial: Value, then producer: Producer<Value>) {
        let storage = PropertyStorage(initial)
        self.storage = storage
        subscription = producer.start(
            Observer { event in
                switch event {
                case .value(let value): storage.set(value)
                case .failed, .completed, .interrupted: storage.complete()
                }
            })
    }

    deinit {
        subscription?.dispose()
    }

    /// The current value.
    public var value: Value {
        storage.value
    }

    /// The changes from the moment of subscription on, without the current value.
    public var changes: Producer<Value> {
        storage.changes
    }

    /// The current value followed by every change.
    public var producer: Producer<Value> {
        storage.producer
    }

    /// A property holding `transform` of this property's value.
    ///
    /// ```swift
    /// let label = Property(count).map { "\($0) items" }
    /// ```
    ///
    /// - Parameter transform: Applied to the current value and to each change.
    /// - Returns: The derived property.
    public func map<NewValue: Sendable>(
        _ transform: @escaping @Sendable (Value) -> NewValue
    ) -> Property<NewValue> {
        Property<NewValue>(producer: producer.map(transform))
    }

    /// Starts `producer`, which must send its first value synchronously, and takes it as initial.
    private init(producer: Producer<Value>) {
        let storage = PropertyStorage<Value>(nil)
        self.storage = storage
        subscription = producer.start(
            Observer { event in
                switch event {
                case .value(let value): storage.set(value)
                case .failed, .completed, .interrupted: storage.complete()
                }
            })
        precondition(storage.hasValue, "the producer of a derived property must send its current value at once")
    }
}
