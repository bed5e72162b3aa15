import Foundation
import LuaKit
import Streams

/// What one call of a Swift service (or a repository method) delivered: its
/// values, then how it ended. `moonflow run --record` keeps these, and
/// `moonflow replay` answers the same calls from them instead of calling again
/// (a database or a network answers differently the second time).
public struct ServiceOutcome: Sendable, Equatable {
    public var values: [LuaValue]
    /// The failure's message, when the call failed.
    public var error: String?

    public init(values: [LuaValue] = [], error: String? = nil) {
        self.values = values
        self.error = error
    }
}

/// Where in a run a service's answer reached the feature: after the run's `after`-th
/// action was handled, at `t` ms on its clock, and (when the recording has one) before the
/// next input, sent at `before` ms. Replay delivers the answer at that point, so answers
/// that came late on the real clock (after later inputs) come as late on the virtual one.
package struct ServiceDelivery: Sendable, Equatable {
    package var after: Int
    package var t: Int
    package var before: Int?
    /// Its place among every answer's arrival in the recorded run (0, 1, ...): answers due at
    /// the same time come in this order.
    package var order: Int?

    package init(after: Int, t: Int, before: Int? = nil, order: Int? = nil) {
        self.after = after
        self.t = t
        self.before = before
        self.order = order
    }

    /// When replay delivers it: at `t`, no later than the next input.
    var due: Int { min(t, before ?? t) }
}

/// Holds a replay's service answers until their point in the run: the tap's answers wait
/// for `actionHandled` to count their action, then are scheduled on the run's clock at
/// their recorded time (no earlier than now, no later than the next input's time).
package final class ReplayGate: @unchecked Sendable {
    /// An answer waiting for its action: where it goes, and the handle that cancels it.
    private struct Held {
        let delivery: ServiceDelivery
        let scheduler: any Scheduler
        let deliver: @Sendable () -> Void
        let cancel: SerialDisposable

        func schedule(_ gate: ReplayGate) {
            cancel.inner = scheduler.schedule(after: max(0, delivery.due - scheduler.now)) { gate.fire(self, hops: 0) }
        }
    }

    private let lock = NSLock()
    private var handled = 0
    private var released = false
    private var waiting: [Held] = []
    /// The recorded answers not delivered yet: their arrival order, and when each is due.
    private var undelivered: [Int: Int]

    /// `deliveries`: every recorded answer's point, so that answers due at one time come in
    /// their recorded order even when a later one's call was made first.
    package init(deliveries: [ServiceDelivery] = []) {
        undelivered = Dictionary(deliveries.compactMap { d in d.order.map { ($0, d.due) } }, uniquingKeysWith: min)
    }

    /// Delivers `held` now, unless an answer that arrived before it in the recorded run is due
    /// by now too: then it goes behind that one (its call may be made by what is delivered
    /// meanwhile). A few hops at most, so an answer whose call never comes (changed code)
    /// holds nothing up for good.
    private func fire(_ held: Held, hops: Int) {
        let waits: Bool = lock.withLock {
            guard let order = held.delivery.order, hops < 8 else { return false }
            let now = held.scheduler.now
            return undelivered.contains { $0.key < order && $0.value <= now }
        }
        if waits {
            held.cancel.inner = held.scheduler.schedule { self.fire(held, hops: hops + 1) }
            return
        }
        if let order = held.delivery.order { _ = lock.withLock { undelivered.removeValue(forKey: order) } }
        held.deliver()
    }

    /// An action was handled (its action event): answers that waited for it are scheduled.
    package func actionHandled() {
        let due: [Held] = lock.withLock {
            handled += 1
            let due = waiting.filter { $0.delivery.after <= handled }
            waiting.removeAll { $0.delivery.after <= handled }
            return due
        }
        for held in due { held.schedule(self) }
    }

    /// The input ended: nothing more will be handled, so every answer still held comes now.
    package func releaseAll() {
        let due: [Held] = lock.withLock {
            released = true
            defer { waiting = [] }
            return waiting
        }
        for held in due { held.schedule(self) }
    }

    /// `deliver` at `delivery`'s point; disposing the result drops it.
    func hold(
        _ delivery: ServiceDelivery, on scheduler: any Scheduler, _ deliver: @escaping @Sendable () -> Void
    ) -> Disposable {
        let held = Held(delivery: delivery, scheduler: scheduler, deliver: deliver, cancel: SerialDisposable())
        let now = lock.withLock {
            if released || delivery.after <= handled { return true }
            waiting.append(held)
            return false
        }
        if now { held.schedule(self) }
        return held.cancel
    }

}

/// Service calls recorded, or answered from a recording: set on a host's
/// bridge (`LuaBridge.serviceTap`) before its feature loads. Calls are counted
/// per service (`users:getAll`), so answers match by call order whatever order
/// the calls finish in.
///
/// A recording tap sees each call's events where they reach the feature (on the state
/// executor) and tells its recorder, with the call's outcome, where in the run its
/// first event arrived (`ServiceTap.Arrival`). An answering tap with a `ReplayGate`
/// delivers each answer at the point its recording names.
public final class ServiceTap: @unchecked Sendable {
    public typealias Recorder = @Sendable (_ service: String, _ call: Int, _ outcome: ServiceOutcome) -> Void

    private let lock = NSLock()
    private let recorder: Recorder?
    private var answers: [String: [Int: ServiceOutcome]]?
    private var deliveries: [String: [Int: ServiceDelivery]] = [:]
    private let gate: ReplayGate?
    private var calls: [String: Int] = [:]
    /// Called on the state executor when a recorded call's first event arrives: the recorder
    /// notes where in the run that was (see `ServiceDelivery`).
    package var arrived: (@Sendable (_ service: String, _ call: Int) -> Void)?

    /// Hands every call's outcome to `recorder` once the call ends.
    public init(recording recorder: @escaping Recorder) {
        self.recorder = recorder
        answers = nil
        gate = nil
    }

    /// Answers calls from `answers` (by service, then call number from 1).
    public init(answering answers: [String: [Int: ServiceOutcome]]) {
        recorder = nil
        self.answers = answers
        gate = nil
    }

    /// Answers calls from `answers`, each at the point `deliveries` names for it (calls
    /// without one answer at once), through `gate`.
    package init(
        answering answers: [String: [Int: ServiceOutcome]], deliveries: [String: [Int: ServiceDelivery]],
        gate: ReplayGate
    ) {
        recorder = nil
        self.answers = answers
        self.deliveries = deliveries
        self.gate = gate
    }

    /// Hands every call's outcome to `memory`, and answers a call `memory` holds the outcome of
    /// (by service and call number) from it instead of calling: a run that goes back in the
    /// debugger runs its plugin again from the load, and each call it made before is answered
    /// as it was then, not made a second time.
    package init(remembering memory: CallMemory) {
        self.memory = memory
        recorder = { service, call, outcome in memory.keep(service, call, outcome) }
        answers = nil
        gate = nil
    }

    private var memory: CallMemory?

    /// The outcome of the next call of `service` when the memory holds it (the call counted).
    func remembered(_ service: String) -> Producer<LuaValue>? {
        guard let memory, let outcome = memory.outcome(service, lock.withLock { (calls[service] ?? 0) + 1 }) else {
            return nil
        }
        _ = nextCall(service)
        let values = Producer<LuaValue>.from(outcome.values)
        return outcome.error.map { Producer.concat([values, .fail(LuaStreamError(message: $0))]) } ?? values
    }

    /// Whether this tap answers from a recording (it calls nothing).
    var answersCalls: Bool { answers != nil }
    /// Whether its answers come at the points the recording names (through a gate).
    var placesAnswers: Bool { gate != nil }

    func nextCall(_ service: String) -> Int {
        lock.withLock {
            calls[service, default: 0] += 1
            return calls[service]!
        }
    }

    /// The answer to the next call of `service` from the recording, at its recorded point
    /// on `scheduler` when it has one. (Goes through the bridge's re-entry like any call.)
    func answer(_ service: String, on scheduler: any Scheduler) -> Producer<LuaValue> {
        let call = nextCall(service)
        guard let outcome = answers?[service]?[call] else {
            return .fail(
                LuaStreamError(
                    message:
                        "the recording has no answer for call \(call) of service '\(service)': the feature calls it more often than when it was recorded; record the session again"
                ))
        }
        let values = Producer<LuaValue>.from(outcome.values)
        let answer = outcome.error.map { Producer.concat([values, .fail(LuaStreamError(message: $0))]) } ?? values
        guard let gate, let delivery = deliveries[service]?[call] else { return answer }
        return Producer { observer, lifetime in
            lifetime += gate.hold(delivery, on: scheduler) {
                lifetime += answer.start(observer)
            }
        }
    }

    /// The call as it reaches the feature (`producer` already re-enters the state executor):
    /// its outcome goes to the recorder once it ends, and `arrived` hears of its first event.
    func recorded(_ producer: Producer<LuaValue>, service: String) -> Producer<LuaValue> {
        let call = nextCall(service)
        guard let recorder else { return producer }
        let collected = Locked([LuaValue]())
        let first = Once()
        let ended = Once()
        let arrived = self.arrived
        let remembers = memory != nil
        return Producer { observer, lifetime in
            lifetime += producer.start(
                Observer { event in
                    if case .interrupted = event {} else if first.claim() { arrived?(service, call) }
                    switch event {
                    case .value(let v): collected.withLock { $0.append(v) }
                    case .completed:
                        if ended.claim() { recorder(service, call, ServiceOutcome(values: collected.withLock { $0 })) }
                    case .failed(let e):
                        if ended.claim() {
                            recorder(
                                service, call,
                                ServiceOutcome(values: collected.withLock { $0 }, error: LuaStreamError(e).description))
                        }
                    case .interrupted: break
                    }
                    observer.send(event)
                })
            // A call the feature stopped listening to (a task's `await` takes its first value)
            // is remembered with the values it gave: a re-run gets them, and its call is not made.
            if remembers {
                _ = lifetime.observeEnded {
                    if ended.claim() { recorder(service, call, ServiceOutcome(values: collected.withLock { $0 })) }
                }
            }
        }
    }
}

/// The outcomes of a run's service and repository calls, by service and call number, kept
/// across the re-runs of a run that goes back in the debugger (`ServiceTap(remembering:)`).
package final class CallMemory: @unchecked Sendable {
    private let lock = NSLock()
    private var outcomes: [String: [Int: ServiceOutcome]] = [:]
    private var kept = 0
    private var forgotten = false

    package init() {}

    func keep(_ service: String, _ call: Int, _ outcome: ServiceOutcome) {
        lock.withLock {
            guard !forgotten else { return }
            if outcomes[service, default: [:]].updateValue(outcome, forKey: call) == nil { kept += 1 }
        }
    }

    /// How many outcomes are kept.
    package var count: Int { lock.withLock { kept } }

    /// Lets every outcome go, and keeps none from now on (the run can no longer go back).
    package func forget() {
        lock.withLock {
            outcomes = [:]
            kept = 0
            forgotten = true
        }
    }

    func outcome(_ service: String, _ call: Int) -> ServiceOutcome? {
        lock.withLock { outcomes[service]?[call] }
    }
}
