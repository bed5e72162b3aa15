import Foundation
import Streams

/// A marble-test source: a producer that sends scripted events at given virtual times and
/// records when each subscription started and ended.
///
/// Make one with `TestScheduler.createHotProducer(_:)` (events at absolute times, shared by all
/// subscribers, missed by late ones) or `createColdProducer(_:)` (events relative to each
/// subscription).
///
/// ```swift
/// let xs = scheduler.createHotProducer([.value(150, 1), .value(210, 2), .completed(250)])
/// let recorder = scheduler.start { xs.producer.map { $0 * 2 } }
/// XCTAssertEqual(recorder.events, [.value(210, 4), .completed(250)])
/// XCTAssertEqual(xs.subscriptions, [SubscriptionInterval(200, 250)])
/// ```
public final class TestableProducer<Value: Sendable>: Sendable {
    /// The scripted events.
    public let recordedEvents: [Recorded<Value>]
    /// The producer to subscribe to.
    public let producer: Producer<Value>

    private let log: SubscriptionLog

    init(scheduler: TestScheduler, events: [Recorded<Value>], isHot: Bool) {
        let log = SubscriptionLog(scheduler)
        self.log = log
        recordedEvents = events
        if isHot {
            let (signal, input) = Signal<Value>.pipe()
            for recorded in events {
                scheduler.schedule(at: recorded.time) { input.send(recorded.event) }
            }
            producer = Producer { observer, lifetime in
                log.track(lifetime)
                lifetime += signal.observe(observer)
            }
        } else {
            producer = Producer { observer, lifetime in
                log.track(lifetime)
                for recorded in events {
                    lifetime += scheduler.schedule(after: recorded.time) { observer.send(recorded.event) }
                }
            }
        }
    }

    /// Every subscription so far, in the order they started.
    public var subscriptions: [SubscriptionInterval] {
        log.intervals
    }
}

/// When each subscription of a test producer started and ended.
private final class SubscriptionLog: @unchecked Sendable {
    private let scheduler: TestScheduler
    private let lock = NSLock()
    private var recorded: [SubscriptionInterval] = []

    init(_ scheduler: TestScheduler) {
        self.scheduler = scheduler
    }

    var intervals: [SubscriptionInterval] {
        lock.withLock { recorded }
    }

    func track(_ lifetime: Lifetime) {
        let index = lock.withLock {
            recorded.append(SubscriptionInterval(scheduler.now))
            return recorded.count - 1
        }
        lifetime.observeEnded { [self] in
            let now = scheduler.now
            lock.withLock { recorded[index] = SubscriptionInterval(recorded[index].subscribed, now) }
        }
    }
}

extension TestScheduler {
    /// Makes a hot source: each event is sent at its absolute time to whoever is subscribed.
    ///
    /// - Parameter events: The script, e.g. `[.value(150, 1), .value(210, 2), .completed(300)]`.
    /// - Returns: The source; its `producer` observes the shared events.
    public func createHotProducer<Value: Sendable>(_ events: [Recorded<Value>]) -> TestableProducer<Value> {
        TestableProducer(scheduler: self, events: events, isHot: true)
    }

    /// Makes a cold source: each subscription gets the events at their times after it started.
    ///
    /// - Parameter events: The script, times relative to the subscription.
    /// - Returns: The source.
    public func createColdProducer<Value: Sendable>(_ events: [Recorded<Value>]) -> TestableProducer<Value> {
        TestableProducer(scheduler: self, events: events, isHot: false)
    }

    /// Runs the standard marble scenario: create the producer at `created`, start it at
    /// `subscribed`, dispose the subscription at `disposed`, and record what arrived.
    ///
    /// The defaults (100, 200, 1000) follow the convention of RxSwift's test suite, so its marble
    /// cases read the same here. The three steps are scheduled before anything else the producer
    /// schedules, so at equal times they run first, as there.
    ///
    /// ```swift
    /// let recorder = scheduler.start { xs.producer.scan(0, +) }
    /// ```
    ///
    /// - Parameters:
    ///   - created: When `create` is called.
    ///   - subscribed: When the producer is started.
    ///   - disposed: When the subscription is disposed; the clock stops there.
    ///   - create: Builds the producer under test.
    /// - Returns: The recorder holding every event the subscription received.
    public func start<Value: Sendable>(
        created: Int = 100, subscribed: Int = 200, disposed: Int = 1000,
        _ create: @escaping () -> Producer<Value>
    ) -> TestRecorder<Value> {
        let recorder = TestRecorder<Value>(self)
        let state = ScenarioState(create)
        schedule(at: created) { state.create() }
        schedule(at: subscribed) { state.subscribe(recorder.observer) }
        schedule(at: disposed) { state.dispose() }
        advance(to: disposed)
        return recorder
    }
}

/// The mutable parts of a `start` scenario; touched only on the thread that advances the clock.
private final class ScenarioState<Value: Sendable>: @unchecked Sendable {
    private let factory: () -> Producer<Value>
    private var producer: Producer<Value>?
    private var subscription: Disposable?

    init(_ factory: @escaping () -> Producer<Value>) {
        self.factory = factory
    }

    func create() { producer = factory() }
    func subscribe(_ observer: Observer<Value>) { subscription = producer?.start(observer) }
    func dispose() { subscription?.dispose() }
}
