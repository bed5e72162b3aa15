/// A cold stream: a recipe that does its work anew for every `start`, like ReactiveSwift's
/// `SignalProducer` or an Rx `Observable`.
///
/// The closure receives the subscriber's observer and the subscription's `Lifetime`; it sends
/// events and ties its resources to the lifetime. Every `start` guards the observer it is given:
/// after a terminal event, or after the returned disposable is disposed, nothing more reaches it.
///
/// **Disposal.** Disposing the subscription ends its lifetime (running all teardown) and
/// delivers nothing more to the observer — in particular *no* `.interrupted` event: whoever
/// disposes already knows. `.interrupted` only travels downstream when a source itself is cut off
/// (for example a `Signal` whose input was interrupted).
///
/// **Terminal events.** On a terminal event the lifetime ends (teardown runs) first, then the
/// event reaches the observer.
///
/// ```swift
/// let numbers = Producer<Int> { observer, lifetime in
///     for n in 1...3 where !lifetime.hasEnded { observer.send(value: n) }
///     observer.sendCompleted()
/// }
/// numbers.map { $0 * 2 }.start(value: { print($0) })   // 2 4 6
/// ```
public struct Producer<Value: Sendable>: Sendable {
    @usableFromInline
    let body: @Sendable (Observer<Value>, Lifetime) -> Void

    /// Creates a producer that runs `body` for each subscription.
    ///
    /// - Parameter body: Receives the subscriber's observer and the subscription's lifetime;
    ///   sends events to the observer and ties resources to the lifetime.
    @inlinable
    public init(_ body: @escaping @Sendable (_ observer: Observer<Value>, _ lifetime: Lifetime) -> Void) {
        self.body = body
    }

    /// Starts the work, delivering events to `observer`.
    ///
    /// ```swift
    /// let subscription = Producer.just(1).start(Observer { print($0) })
    /// ```
    ///
    /// - Parameter observer: Receives the events; guarded by the event grammar.
    /// - Returns: Disposing it tears the work down and stops delivery.
    @inlinable
    @discardableResult
    public func start(_ observer: Observer<Value> = Observer { _ in }) -> Disposable {
        let disposables = CompositeDisposable()
        let guarded = Observer<Value> { event in
            if event.isTerminating {
                // Only the first terminal event gets through: disposing is the atomic claim.
                if disposables.tryDispose() { observer.send(event) }
            } else if !disposables.isDisposed {
                observer.send(event)
            }
        }
        body(guarded, Lifetime(disposables))
        return disposables
    }

    /// Starts the work with one optional closure per kind of event.
    ///
    /// ```swift
    /// Producer.from([1, 2]).start(value: { print($0) }, completed: { print("done") })
    /// ```
    ///
    /// - Parameters:
    ///   - value: Called for each value.
    ///   - failed: Called when the stream fails.
    ///   - completed: Called when the stream completes.
    ///   - interrupted: Called when the stream is interrupted.
    /// - Returns: Disposing it tears the work down and stops delivery.
    @inlinable
    @discardableResult
    public func start(
        value: (@Sendable (Value) -> Void)? = nil,
        failed: (@Sendable (any Error) -> Void)? = nil,
        completed: (@Sendable () -> Void)? = nil,
        interrupted: (@Sendable () -> Void)? = nil
    ) -> Disposable {
        start(Observer(value: value, failed: failed, completed: completed, interrupted: interrupted))
    }

    /// Runs the body inside an existing lifetime without a new guard: the cheap path for
    /// operators whose output terminates whenever their input does.
    @inlinable
    func run(_ observer: Observer<Value>, in lifetime: Lifetime) {
        body(observer, lifetime)
    }

    /// Builds an operator that shares the subscription's lifetime with its upstream: `transform`
    /// turns the downstream observer into the observer the upstream sends to.
    ///
    /// Only for operators that terminate whenever the upstream terminates (map, filter, scan...);
    /// the others start the upstream with its own `start` so it can be torn down separately.
    @inlinable
    func lift<Output: Sendable>(
        _ transform: @escaping @Sendable (Observer<Output>, Lifetime) -> Observer<Value>
    ) -> Producer<Output> {
        let body = self.body
        return Producer<Output> { observer, lifetime in
            body(transform(observer, lifetime), lifetime)
        }
    }
}
