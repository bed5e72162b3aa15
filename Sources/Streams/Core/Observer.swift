/// Receives the events of a stream.
///
/// An observer is a cheap value wrapping one closure. Whoever sends into an observer must follow
/// the event grammar and must not send concurrently from several threads; `Producer.start`
/// guards the observer it is given, so events after a terminal event are dropped there.
///
/// ```swift
/// let printer = Observer<Int>(value: { print($0) }, completed: { print("done") })
/// printer.send(value: 1)
/// printer.sendCompleted()
/// ```
public struct Observer<Value: Sendable>: Sendable {
    /// The closure every event goes to.
    public let action: @Sendable (Event<Value>) -> Void

    /// Creates an observer that hands every event to `action`.
    ///
    /// - Parameter action: Called once per event.
    @inlinable
    public init(_ action: @escaping @Sendable (Event<Value>) -> Void) {
        self.action = action
    }

    /// Creates an observer from one optional closure per kind of event.
    ///
    /// ```swift
    /// let observer = Observer<String>(value: { print($0) }, failed: { print("error: \($0)") })
    /// ```
    ///
    /// - Parameters:
    ///   - value: Called for each value.
    ///   - failed: Called when the stream fails.
    ///   - completed: Called when the stream completes.
    ///   - interrupted: Called when the stream is interrupted.
    @inlinable
    public init(
        value: (@Sendable (Value) -> Void)? = nil,
        failed: (@Sendable (any Error) -> Void)? = nil,
        completed: (@Sendable () -> Void)? = nil,
        interrupted: (@Sendable () -> Void)? = nil
    ) {
        self.action = { event in
            switch event {
            case .value(let element): value?(element)
            case .failed(let error): failed?(error)
            case .completed: completed?()
            case .interrupted: interrupted?()
            }
        }
    }

    /// Sends one event.
    ///
    /// - Parameter event: The event to deliver.
    @inlinable
    public func send(_ event: Event<Value>) {
        action(event)
    }

    /// Sends a value.
    ///
    /// - Parameter value: The value to deliver.
    @inlinable
    public func send(value: Value) {
        action(.value(value))
    }

    /// Ends the stream with `error`.
    ///
    /// - Parameter error: Why the stream failed.
    @inlinable
    public func sendFailed(_ error: any Error) {
        action(.failed(error))
    }

    /// Ends the stream normally.
    @inlinable
    public func sendCompleted() {
        action(.completed)
    }

    /// Ends the stream because its source was torn down.
    @inlinable
    public func sendInterrupted() {
        action(.interrupted)
    }
}
