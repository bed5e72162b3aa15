/// Funnels events from several sources (threads, schedulers, inner streams) into one observer,
/// one at a time, in the order they were sent, and enforces the event grammar.
///
/// It never blocks on the downstream observer and holds no lock while calling it: an event sent
/// while another is being delivered — from another thread, or re-entrantly from the observer
/// itself — is queued and delivered by the thread already delivering, right after the current
/// event. Events after the first terminal event are dropped.
///
/// ```swift
/// let serializer = Serializer(downstream)
/// left.start(serializer.observer)
/// right.start(serializer.observer)
/// ```
final class Serializer<Value: Sendable>: Sendable {
    private struct State {
        var isDelivering = false
        var isTerminated = false
        var queue: [Event<Value>] = []
    }

    private let state = Locked(State())
    private let downstream: Observer<Value>

    init(_ downstream: Observer<Value>) {
        self.downstream = downstream
    }

    /// An observer that sends into this serializer.
    var observer: Observer<Value> {
        Observer { self.send($0) }
    }

    func send(_ event: Event<Value>) {
        let deliverNow: Bool = state.withLock { state in
            if state.isTerminated { return false }
            if event.isTerminating { state.isTerminated = true }
            if state.isDelivering {
                state.queue.append(event)
                return false
            }
            state.isDelivering = true
            return true
        }
        guard deliverNow else { return }
        var next: Event<Value>? = event
        while let event = next {
            downstream.send(event)
            next = state.withLock { state in
                if state.queue.isEmpty {
                    state.isDelivering = false
                    return nil
                }
                return state.queue.removeFirst()
            }
        }
    }

    func send(value: Value) { send(.value(value)) }
    func sendFailed(_ error: any Error) { send(.failed(error)) }
    func sendCompleted() { send(.completed) }
    func sendInterrupted() { send(.interrupted) }
}
