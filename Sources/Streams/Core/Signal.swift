/// A hot stream: events are pushed in through an input observer and fan out to whoever is
/// observing at that moment; nothing is replayed except the terminal event.
///
/// Sending is serialized without blocking: an event sent while another is being delivered (from
/// an observer on the same thread, or from another thread) is queued and delivered right after
/// the current one, by the thread already delivering. So a re-entrant send never runs inside the
/// delivery that caused it, and events reach every observer in the order they were sent.
///
/// Observing a signal that has already terminated delivers that terminal event at once.
///
/// ```swift
/// let (actions, send) = Signal<String>.pipe()
/// actions.observe(value: { print("got", $0) })
/// send.send(value: "tap")   // got tap
/// send.sendCompleted()
/// ```
public final class Signal<Value: Sendable>: Sendable {
    private struct Subscriber {
        let id: Int
        let observer: Observer<Value>
        let disposable: AnyDisposable
    }

    private struct State {
        var subscribers: [Subscriber] = []
        var nextID = 0
        var terminal: Event<Value>?
    }

    private let state: Locked<State>
    private let serializer: Serializer<Value>

    private init() {
        let state = Locked(State())
        self.state = state
        serializer = Serializer(
            Observer { event in
                let subscribers: [Subscriber] = state.withLock { state in
                    let subscribers = state.subscribers
                    if event.isTerminating {
                        state.terminal = event
                        state.subscribers = []
                    }
                    return subscribers
                }
                for subscriber in subscribers where !subscriber.disposable.isDisposed {
                    subscriber.observer.send(event)
                }
            })
    }

    /// Creates a signal and the observer that feeds it.
    ///
    /// ```swift
    /// let (output, input) = Signal<Int>.pipe()
    /// ```
    ///
    /// - Returns: The signal to observe and the observer to send into.
    public static func pipe() -> (output: Signal<Value>, input: Observer<Value>) {
        let signal = Signal()
        let serializer = signal.serializer
        return (signal, Observer { serializer.send($0) })
    }

    /// Starts observing the signal.
    ///
    /// ```swift
    /// let subscription = signal.observe(Observer { print($0) })
    /// subscription?.dispose()
    /// ```
    ///
    /// - Parameter observer: Receives every event sent from now on.
    /// - Returns: Disposing it stops the observation; `nil` if the signal had already
    ///   terminated, in which case `observer` has just received the terminal event.
    @discardableResult
    public func observe(_ observer: Observer<Value>) -> Disposable? {
        let result: (Disposable?, Event<Value>?) = state.withLock { state in
            if let terminal = state.terminal { return (nil, terminal) }
            let id = state.nextID
            state.nextID += 1
            let disposable = AnyDisposable { [weak self] in self?.remove(id) }
            state.subscribers.append(Subscriber(id: id, observer: observer, disposable: disposable))
            return (disposable, nil)
        }
        if let terminal = result.1 { observer.send(terminal) }
        return result.0
    }

    /// Starts observing with one optional closure per kind of event.
    ///
    /// - Parameters:
    ///   - value: Called for each value.
    ///   - failed: Called when the signal fails.
    ///   - completed: Called when the signal completes.
    ///   - interrupted: Called when the signal is interrupted.
    /// - Returns: Disposing it stops the observation; `nil` if the signal had already terminated.
    @discardableResult
    public func observe(
        value: (@Sendable (Value) -> Void)? = nil,
        failed: (@Sendable (any Error) -> Void)? = nil,
        completed: (@Sendable () -> Void)? = nil,
        interrupted: (@Sendable () -> Void)? = nil
    ) -> Disposable? {
        observe(Observer(value: value, failed: failed, completed: completed, interrupted: interrupted))
    }

    /// A producer whose every subscription observes this signal until it is disposed.
    ///
    /// ```swift
    /// let firstTap = taps.producer.take(1)
    /// ```
    public var producer: Producer<Value> {
        Producer { observer, lifetime in
            lifetime += self.observe(observer)
        }
    }

    private func remove(_ id: Int) {
        state.withLock { state in
            if let index = state.subscribers.firstIndex(where: { $0.id == id }) {
                state.subscribers.remove(at: index)
            }
        }
    }
}
