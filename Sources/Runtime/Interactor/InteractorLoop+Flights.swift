import Streams

/// The loop's flights: the handler and effect streams it started, the `concat` handlings waiting
/// for a slot of their type, and cancelling them.
///
/// **Threading**: the flight table lives in `shared`, under its lock; `process(_:strategy:)`,
/// `finish` and `startFlight` run on the drainer, the rest on any thread.
extension InteractorLoop {
    @usableFromInline
    enum FlightKind {
        case handler
        case effect(Effect)
    }

    @usableFromInline
    struct Flight {
        @usableFromInline let origin: Origin
        @usableFromInline let type: String
        @usableFromInline let kind: FlightKind
        @usableFromInline let disposable: SerialDisposable
        @inlinable var isHandler: Bool { if case .handler = kind { true } else { false } }

        @inlinable
        init(origin: Origin, type: String, kind: FlightKind, disposable: SerialDisposable) {
            self.origin = origin
            self.type = type
            self.kind = kind
            self.disposable = disposable
        }
    }

    /// A `concat` handling waiting for a free slot of its type.
    @usableFromInline
    struct Waiting {
        @usableFromInline let handled: Handled<Mutation>
        @usableFromInline let origin: Origin
        @usableFromInline let limit: Int

        @inlinable
        init(handled: Handled<Mutation>, origin: Origin, limit: Int) {
            self.handled = handled
            self.origin = origin
            self.limit = limit
        }
    }

    /// The strategies other than `.merge`, which need the action's type and the flight table.
    /// Inlinable, as `process(_:)` is: the streams it starts are drained specialized.
    @inlinable
    func process(_ origin: Origin, strategy: FlattenStrategy) {
        let type = actionType(origin.action)
        if let limit = strategy.concurrencyLimit {
            // `.concat` and `.concurrent(limit:)`: handle now, start when a slot of this type is free.
            let handled = handle(origin.action, current)
            let queued: Bool = shared.withLock { shared in
                guard shared.handlers(ofType: type) >= limit || !(shared.waiting[type]?.isEmpty ?? true) else {
                    return false
                }
                shared.waiting[type, default: FIFO()].push(Waiting(handled: handled, origin: origin, limit: limit))
                return true
            }
            if !queued { apply(handled, origin, type: type) }
        } else if strategy == .latest {
            cancelFlights { $0.isHandler && $0.type == type }
            apply(handle(origin.action, current), origin, type: type)
        } else {
            // `.exhaust`: dropped while a handling of its type runs.
            guard shared.withLock({ $0.handlers(ofType: type) }) == 0 else { return }
            apply(handle(origin.action, current), origin, type: type)
        }
    }

    @usableFromInline
    func finish(_ flight: Flight, _ error: (any Error)?) {
        if let error { fail(error, flight.origin, flight.isHandler ? .handle : .effect) }
        if flight.isHandler { startWaiting(type: flight.type) }
    }

    /// Starts the next `concat` handlings of `type` while a slot of its type is free.
    private func startWaiting(type: String) {
        while let waiting: Waiting = shared.withLock({ shared in
            guard let first = shared.waiting[type]?.elements.first,
                shared.handlers(ofType: type) < first.limit
            else { return nil }
            return shared.waiting[type]?.pop()
        }) {
            apply(waiting.handled, waiting.origin, type: type)
        }
    }

    /// Inlinable, as is what it calls when the stream sends (`arrive`, `startDraining`), so
    /// that the arrivals of a caller's streams are drained specialized for its types too.
    @inlinable
    func startFlight(_ producer: Producer<Mutation>, _ origin: Origin, type: String, kind: FlightKind) {
        let disposable = SerialDisposable()
        let id: Int? = shared.withLock { shared in
            guard !shared.disposed else { return nil }
            shared.nextFlightID += 1
            shared.flights[shared.nextFlightID] = Flight(origin: origin, type: type, kind: kind, disposable: disposable)
            return shared.nextFlightID
        }
        guard let id else { return }
        let observer = Observer<Mutation> { [weak self] event in
            switch event {
            case .value(let mutation): self?.arrive(.value(mutation, flight: id))
            case .failed(let error): self?.arrive(.ended(flight: id, error: error))
            case .completed, .interrupted: self?.arrive(.ended(flight: id, error: nil))
            }
        }
        if workIsImmediate {
            disposable.inner = producer.start(observer)
        } else {
            context.work.schedule { disposable.inner = producer.start(observer) }
        }
    }

    // MARK: Control (any thread)

    func cancel(where matches: (String) -> Bool) {
        let doomed: [SerialDisposable] = shared.withLock { shared in
            for type in shared.waiting.keys where matches(type) { shared.waiting[type] = nil }
            return Self.removeFlights(from: &shared) { matches($0.type) }
        }
        doomed.forEach { $0.dispose() }
    }

    @usableFromInline
    func cancelFlights(where matches: (Flight) -> Bool) {
        let doomed = shared.withLock { Self.removeFlights(from: &$0, where: matches) }
        doomed.forEach { $0.dispose() }
    }

    static func removeFlights(from shared: inout Shared, where matches: (Flight) -> Bool) -> [SerialDisposable] {
        // Plain loops: this generic code runs unspecialized, where `filter` and `compactMap`
        // would look up their iterator types by name the first time (a scan of every
        // protocol conformance in the binary, at each start of `moonflow run`).
        if shared.flights.isEmpty { return [] }
        var ids: [Int] = []
        for (id, flight) in shared.flights where matches(flight) { ids.append(id) }
        var doomed: [SerialDisposable] = []
        for id in ids {
            if let flight = shared.flights.removeValue(forKey: id) { doomed.append(flight.disposable) }
        }
        return doomed
    }

    var inFlight: [Owner.InFlight] {
        shared.withLock { shared in
            let running = shared.flights.sorted { $0.key < $1.key }.map { _, flight in
                let kind: Owner.InFlight.Kind
                switch flight.kind {
                case .handler: kind = .handler
                case .effect(let effect): kind = .effect(effect)
                }
                return Owner.InFlight(
                    action: flight.origin.action, actionID: flight.origin.id, actionType: flight.type, kind: kind)
            }
            let queued = shared.waiting.flatMap { type, waiting in
                waiting.elements.map {
                    Owner.InFlight(action: $0.origin.action, actionID: $0.origin.id, actionType: type, kind: .queued)
                }
            }
            return running + queued.sorted { $0.actionID < $1.actionID }
        }
    }
}
