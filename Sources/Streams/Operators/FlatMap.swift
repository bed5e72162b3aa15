/// `flatMap`: every outer value becomes an inner producer, and the inners' values are flattened
/// into one stream according to a `FlattenStrategy`.
///
/// The outer and each inner run as their own subscriptions, so each is torn down as soon as it
/// terminates; the result completes when the outer and every inner (running or waiting) have
/// completed. Any failure or interruption, outer or inner, ends the result at once. A thrown
/// `transform` error fails it. Inners may send from any thread: downstream events go through one
/// `Serializer`, and the bookkeeping is under one lock that is never held while calling out.
final class FlatMap<Value: Sendable, Inner: Sendable>: Sendable {
    private struct State {
        var outerCompleted = false
        /// Inners started or about to start (concurrent), or 1 while an inner runs (latest, exhaust).
        var active = 0
        /// Inners over the concurrency limit, in arrival order.
        var waiting: [Producer<Inner>] = []
        /// Inners admitted but not yet started; started by the one thread draining.
        var admitted: [Producer<Inner>] = []
        var isDraining = false
        /// Identifies the newest inner (latest).
        var generation = 0
    }

    private let strategy: FlattenStrategy.Kind
    private let transform: @Sendable (Value) throws -> Producer<Inner>
    private let downstream: Serializer<Inner>
    private let lifetime: Lifetime
    private let state = Locked(State())
    /// The running inner for `.latest`.
    private let latestInner = SerialDisposable()

    init(
        _ strategy: FlattenStrategy, _ transform: @escaping @Sendable (Value) throws -> Producer<Inner>,
        _ observer: Observer<Inner>, _ lifetime: Lifetime
    ) {
        self.strategy = strategy.kind
        self.transform = transform
        downstream = Serializer(observer)
        self.lifetime = lifetime
    }

    func run(_ outer: Producer<Value>) {
        lifetime += latestInner
        lifetime += outer.start(
            Observer { [self] event in
                switch event {
                case .value(let value):
                    do { receive(try transform(value)) } catch { downstream.sendFailed(error) }
                case .failed(let error):
                    downstream.sendFailed(error)
                case .interrupted:
                    downstream.sendInterrupted()
                case .completed:
                    let isDone = state.withLock { state in
                        state.outerCompleted = true
                        return state.active == 0
                    }
                    if isDone { downstream.sendCompleted() }
                }
            })
    }

    private func receive(_ inner: Producer<Inner>) {
        switch strategy {
        case .concurrent(let limit):
            state.withLock { state in
                if state.active < limit {
                    state.active += 1
                    state.admitted.append(inner)
                } else {
                    state.waiting.append(inner)
                }
            }
            drain()
        case .latest:
            let generation = state.withLock { state in
                state.generation += 1
                state.active = 1
                return state.generation
            }
            latestInner.inner = nil
            if lifetime.hasEnded { return }
            latestInner.inner = inner.start(
                innerObserver { [self] in
                    state.withLock { state in
                        if state.generation == generation { state.active = 0 }
                        return state.outerCompleted && state.active == 0
                    }
                })
        case .exhaust:
            let isBusy = state.withLock { state in
                defer { state.active = 1 }
                return state.active > 0
            }
            guard !isBusy else { return }
            startTracked(inner) { [self] in
                state.withLock { state in
                    state.active = 0
                    return state.outerCompleted
                }
            }
        }
    }

    /// Starts admitted inners one by one; a single thread drains at a time, so inners that
    /// complete synchronously hand over to the next without growing the stack.
    private func drain() {
        let isDrainer = state.withLock { state in
            if state.isDraining { return false }
            state.isDraining = true
            return true
        }
        guard isDrainer else { return }
        while true {
            let next: Producer<Inner>? = state.withLock { state in
                if state.admitted.isEmpty {
                    state.isDraining = false
                    return nil
                }
                return state.admitted.removeFirst()
            }
            guard let next else { return }
            startTracked(next) { [self] in
                state.withLock { state in
                    if state.waiting.isEmpty {
                        state.active -= 1
                    } else {
                        state.admitted.append(state.waiting.removeFirst())
                    }
                    return state.outerCompleted && state.active == 0
                }
            }
        }
    }

    /// Starts `inner` as its own subscription tied to the lifetime, and unties it when it ends.
    private func startTracked(_ inner: Producer<Inner>, completed: @escaping @Sendable () -> Bool) {
        let holder = SerialDisposable()
        guard let token = lifetime.add(holder) else { return }
        let lifetime = self.lifetime
        holder.inner = inner.start(
            innerObserver { [self] in
                lifetime.remove(token)
                let isDone = completed()
                drain()
                return isDone
            })
    }

    /// Forwards an inner's events; on completion, asks `completed` whether the whole result is done.
    private func innerObserver(_ completed: @escaping @Sendable () -> Bool) -> Observer<Inner> {
        Observer { [downstream] event in
            if case .completed = event {
                if completed() { downstream.sendCompleted() }
            } else {
                downstream.send(event)
            }
        }
    }
}

extension Producer {
    /// Maps each value to a producer and flattens the inner producers by `strategy`.
    ///
    /// ```swift
    /// actions.flatMap(.latest) { action in handle(action) }
    /// ```
    ///
    /// - Parameters:
    ///   - strategy: How inners combine: `.merge`, `.concat`, `.latest`, `.exhaust` or
    ///     `.concurrent(limit:)`.
    ///   - transform: Makes the inner producer for a value; if it throws, the result fails.
    /// - Returns: A producer of the inners' values.
    public func flatMap<Inner: Sendable>(
        _ strategy: FlattenStrategy, _ transform: @escaping @Sendable (Value) throws -> Producer<Inner>
    ) -> Producer<Inner> {
        Producer<Inner> { observer, lifetime in FlatMap(strategy, transform, observer, lifetime).run(self) }
    }

    /// Maps each value to a producer; only the newest inner runs (`flatMap(.latest, ...)`).
    ///
    /// - Parameter transform: Makes the inner producer for a value.
    /// - Returns: A producer of the newest inner's values.
    public func flatMapLatest<Inner: Sendable>(
        _ transform: @escaping @Sendable (Value) throws -> Producer<Inner>
    ) -> Producer<Inner> {
        flatMap(.latest, transform)
    }

    /// Maps each value to a producer; inners run one at a time, in order (`flatMap(.concat, ...)`).
    ///
    /// - Parameter transform: Makes the inner producer for a value.
    /// - Returns: A producer of the inners' values, inner after inner.
    public func concatMap<Inner: Sendable>(
        _ transform: @escaping @Sendable (Value) throws -> Producer<Inner>
    ) -> Producer<Inner> {
        flatMap(.concat, transform)
    }
}

extension Producer {
    /// Flattens a producer of producers by `strategy`.
    ///
    /// - Parameter strategy: How inners combine.
    /// - Returns: A producer of the inners' values.
    public func flatten<Inner: Sendable>(_ strategy: FlattenStrategy) -> Producer<Inner>
    where Value == Producer<Inner> {
        flatMap(strategy) { $0 }
    }
}
