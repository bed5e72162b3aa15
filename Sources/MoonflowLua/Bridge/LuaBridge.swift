import Foundation
import LuaKit
import Streams

/// Per-state glue between Lua and the Swift streams: the scheduler Lua's
/// timers run on, the userdata classes, and the helpers that call Lua
/// functions from stream callbacks.
///
/// **Threading:** confined to the host's state scheduler like the `LuaState`
/// it wraps; every stream event that reaches Lua code is delivered there.
package final class LuaBridge: @unchecked Sendable {
    package let lua: LuaState
    /// Timers, delays and debounces of Lua streams run here; so does Lua code.
    package let scheduler: any Scheduler
    /// Where Swift services' results re-enter (the state scheduler).
    var streamClass: LuaClass!
    package let dispatch: LuaDispatch
    var taskClass: LuaClass!
    /// Async work started and not yet delivered back (services); a virtual-clock
    /// run waits for it before moving time on.
    package let pending = PendingWork()
    /// Results held back by `holdingReentries`.
    let held = Locked(HeldReentries())
    /// Per virtual clock, the order its Swift results re-enter in.
    let reentryOrders = Locked([ObjectIdentifier: ReentryOrders.Entry]())
    /// Runs a block on the state executor and waits (the host's queue); nil: run it in place.
    package var performer: (@Sendable (() -> Void) -> Void)? {
        get { executor.withLock { $0.performer } }
        set { executor.withLock { $0.performer = newValue } }
    }

    /// Whether the calling thread is the state executor's (always, without a performer).
    package var isOnExecutor: Bool {
        guard let check = executor.withLock({ $0.check }) else { return true }
        return check()
    }
    /// Set by the host with the performer: asks whether the caller runs on the state executor.
    package func setExecutorCheck(_ check: @escaping @Sendable () -> Bool) { executor.withLock { $0.check = check } }
    private let executor = Locked(ExecutorHooks())

    /// The performer and the executor check, in a struct: a closure that is itself a `Locked`'s
    /// state (or an optional or tuple of one) is re-wrapped in a conversion thunk at each
    /// `withLock`, so each send kept two more objects and deepened the chain every call of it
    /// walks, until the stack overflowed (a long-lived host on a queue executor).
    private struct ExecutorHooks {
        var performer: (@Sendable (() -> Void) -> Void)?
        var check: (@Sendable () -> Bool)?
    }

    /// Runs `body` on the state executor and waits for it (for work that cannot fail).
    package func performQuietly(_ body: () -> Void) {
        guard let performer else { return body() }
        withoutActuallyEscaping(body) { body in
            let box = UncheckedSendable(body)
            performer { box.value() }
        }
    }

    /// Runs `body` on the state executor (where Lua may be called) and returns its result.
    package func perform<R>(_ body: () throws -> R) throws -> R {
        guard let performer else { return try body() }
        var result: Result<R, any Error>?
        withoutActuallyEscaping(body) { body in
            let box = UncheckedSendable(body)
            let out = UncheckedSendable<(Result<R, any Error>) -> Void>({ result = $0 })
            performer { out.value(Result { try box.value() }) }
        }
        // Not run: the state is stuck (the performer runs nothing on it any more).
        guard let result else { throw FeatureError.stuck(feature: nil) }
        return try result.get()
    }

    package init(lua: LuaState, scheduler: any Scheduler) throws {
        self.lua = lua
        self.scheduler = scheduler
        dispatch = try LuaDispatch(lua)
        streamClass = try lua.makeClass("moonflow.stream", methods: LuaStreamMethods.table(self))
        let awaitMethod = try lua.call(try lua.load(HostChunks.taskAwait), []) { try $0.ref(1) }
        taskClass = try lua.makeClass(
            "moonflow.task", methods: LuaTaskMethods.table(self), luaMethods: ["await": awaitMethod])
        try lua.registerCallout(
            try lua.ref(
                .function { [weak self] _ in
                    self?.finishWaitingWrites()
                    return []
                }))
    }

    /// Features whose writes wait in Lua (`LuaFeature`'s pending writes), taken into their
    /// snapshots before Lua next calls out into code that may block (a service, os.execute):
    /// a call stuck there leaves a state nothing may go into again, and the feature's last
    /// state (what a rebuild starts from) must hold every reduce that finished.
    private let waitingWrites = Locked([WeakWaitingWrites]())

    /// Notes that `owner`'s writes wait in Lua; on the thread running Lua.
    package func noteWritesWaiting(_ owner: any WritesWaitingInLua) {
        waitingWrites.withLock { list in
            if !list.contains(where: { $0.owner === owner }) { list.append(WeakWaitingWrites(owner: owner)) }
        }
        lua.wantCallout()
    }

    private func finishWaitingWrites() {
        let owners = waitingWrites.withLock { list in
            defer { list = [] }
            return list.compactMap(\.owner)
        }
        for owner in owners { owner.finishWaitingWrites() }
    }

    /// Pushes a producer to Lua as a stream userdata.
    package func push(_ producer: Producer<LuaValue>) -> LuaPush {
        .object(LuaStream(producer), streamClass)
    }

    /// The stream at slot `i`, or a Lua-style argument error.
    package func stream(_ slots: LuaSlots, _ i: Int, _ function: String) throws -> Producer<LuaValue> {
        guard let s = slots.object(i, as: LuaStream.self) else { throw slots.bad(i, function, "stream") }
        return s.producer
    }

    /// Calls a Lua function with values and returns its first result copied.
    func call1(_ fn: LuaRef, _ args: [LuaValue], path: String = "result") throws -> LuaValue {
        try lua.call(fn, args.map { .value($0) }) { try $0.value(1, path: path) }
    }

    /// Calls a Lua function that must return a stream.
    ///
    /// - Parameters:
    ///   - what: the function, for messages ("the flatMap function").
    ///   - location: where it is defined, named in the error when it returns something else.
    /// - Throws: `LuaStreamError` when it returns nil or a plain value, saying what to return.
    package func callStream(
        _ fn: LuaRef, _ args: [LuaPush], what: String, location: String?
    ) throws -> Producer<LuaValue> {
        try lua.call(fn, args) { slots in
            let got: String
            switch slots.returned(1) {
            case .stream(let producer): return producer
            case .nothing(let described): got = described
            case .plain: got = slots.typeName(1)
            }
            let at = location.map { " (\($0))" } ?? ""
            throw LuaStreamError(
                message:
                    "\(what)\(at) must return a stream (got \(got)); return mf.just(value) for one value, mf.empty() for none",
                location: location)
        }
    }

    /// `asStream(name, result)`, through which a Lua service's result goes: a stream
    /// stays as it is, a plain value becomes `mf.just(value)`; for nil it returns nil and
    /// a message naming the service's `file:line` (the Lua caller raises it at its caller).
    package func serviceResult(_ definition: FeatureDefinition) -> LuaPush {
        .function { [unowned self] args in
            let name = (try? args.string(1, function: "service")) ?? "?"
            switch args.returned(2) {
            case .stream(let producer):
                return [self.push(producer)]
            case .nothing(let described):
                let at = definition.locations["services.\(name)"].map { " (\($0))" } ?? ""
                return [
                    .value(.nil),
                    .value(
                        .string(
                            LuaString(
                                "service '\(name)'\(at) returned \(described); return a stream, or a value (taken as mf.just(value))"
                            ))),
                ]
            case .plain:
                return [self.push(.just(try args.value(2, path: "services.\(name) result")))]
            }
        }
    }

    /// Delivers `producer`'s events on the state scheduler, counting it as
    /// pending work until it terminates.
    /// Folders whose path is left out of what a feature reports (`/app/Plugins/` makes
    /// `/app/Plugins/cart/init.lua:12` read `cart/init.lua:12`): a host's absolute search paths,
    /// each ending in `/`. Set before features load.
    package var locationRoots: [String] {
        get { rootsBox.withLock { $0 } }
        set { rootsBox.withLock { $0 = newValue } }
    }
    private let rootsBox = Locked<[String]>([])

    /// `text` with every location root left out.
    package func relative(_ text: String) -> String {
        locationRoots.reduce(text) { $0.replacingOccurrences(of: $1, with: "") }
    }

    /// `error` with every location root left out of its message, location and traceback.
    package func relative(_ error: FeatureError) -> FeatureError {
        guard !locationRoots.isEmpty else { return error }
        return FeatureError(
            stage: error.stage, action: error.action, message: relative(error.message),
            location: error.location.map(relative), traceback: error.traceback.map(relative),
            service: error.service, underlying: error.underlying)
    }

    /// Records service calls, or answers them from a recording (`--record`, `replay`).
    package var serviceTap: ServiceTap? {
        get { tapBox.withLock { $0 } }
        set { tapBox.withLock { $0 = newValue } }
    }
    private let tapBox = Locked<ServiceTap?>(nil)

    /// Told of every Swift service or repository call as the feature makes it (on the state
    /// executor, inside the Lua code that called): `moonflow run` reports each as a `call`
    /// event. Set before features load.
    package var callMade: (@Sendable (_ service: String) -> Void)? {
        get { callBox.withLock { $0 } }
        set { callBox.withLock { $0 = newValue } }
    }
    private let callBox = Locked<(@Sendable (String) -> Void)?>(nil)

    /// A Swift service's call (`service` names it: `search`, `users:getAll`),
    /// through the tap when there is one, re-entering the state executor.
    package func reenter(_ producer: Producer<LuaValue>, service: String) -> Producer<LuaValue> {
        callMade?(service)
        guard let tap = serviceTap else { return reenter(producer) }
        // A recording sees the call where it reaches the feature (after re-entry), so where
        // its answer arrived in the run is the executor's order; a replay's answer re-enters
        // like any call, at the point the recording names.
        // Where the recording says when each answer arrived, the answer is a timer on the
        // run's clock, held until its action has been handled (`ReplayGate`): not work in
        // flight that a virtual clock would wait for in real time, nor kept in call order.
        if tap.placesAnswers { return tap.answer(service, on: scheduler.resolved) }
        if let known = tap.remembered(service) { return reenter(known) }
        if tap.answersCalls { return reenter(tap.answer(service, on: scheduler.resolved)) }
        return tap.recorded(reenter(producer), service: service)
    }

    package func reenter(_ producer: Producer<LuaValue>) -> Producer<LuaValue> {
        let router = self.scheduler
        let pending = self.pending
        // Weak here, not only in the observer below: a nested closure's capture list is
        // evaluated inside this one, which would otherwise hold the bridge strongly (the
        // stream is a userdata of the state the bridge owns).
        return Producer { [weak self] observer, lifetime in
            // Re-enter on the clock that started the call, even if a test store
            // points the bridge at another clock before the result arrives.
            let scheduler = router.resolved
            pending.begin(on: scheduler)
            let once = Once()
            @Sendable func finish() { if once.claim() { pending.end(on: scheduler) } }
            // On a virtual clock, results re-enter in the order the calls were made.
            let order = (scheduler as? TestScheduler).flatMap { self?.reentryOrder(for: $0) }
            let ticket = order?.ticket()
            let opened = Once()
            lifetime += producer.start(
                Observer { [weak self] event in
                    let deliver: @Sendable () -> Void = {
                        observer.send(event)
                        if event.isTerminating { finish() }
                    }
                    let enter: @Sendable () -> Void = { [weak self] in
                        if let self, self.hold(scheduler, deliver) { return }
                        scheduler.schedule(deliver)
                        pending.poke()
                    }
                    if let order, let ticket {
                        order.pass(ticket, opening: opened.claim(), enter)
                        pending.poke()
                    } else {
                        enter()
                    }
                })
            _ = lifetime.observeEnded {
                // Ended without a word (cancelled): later calls need not wait for it.
                if let order, let ticket, opened.claim() { order.pass(ticket, opening: true, nil) }
                finish()
            }
        }
    }
}

extension LuaBridge {
    /// Lets the Swift results that arrived for `clock` re-enter it, in the order
    /// their calls were made (`FeatureHost.settle` does, before running the clock).
    package func releaseReentries(on clock: TestScheduler) { reentryOrder(for: clock).release() }

    /// Whether Swift results for `clock` arrived and wait for `releaseReentries`.
    package func hasArrivedReentries(on clock: TestScheduler) -> Bool { reentryOrder(for: clock).hasParked }

    /// The order Swift results re-enter `clock` in (one per virtual clock: each test store has its own).
    fileprivate func reentryOrder(for clock: TestScheduler) -> ReentryOrder {
        reentryOrders.withLock { orders in
            // A clock that is gone may have left its address to this one: its order does not carry over.
            if let entry = orders[ObjectIdentifier(clock)], entry.clock === clock { return entry.order }
            orders = orders.filter { $0.value.clock != nil }
            let order = ReentryOrder()
            orders[ObjectIdentifier(clock)] = ReentryOrders.Entry(clock: clock, order: order)
            return order
        }
    }

    /// Runs `body` with async results held back: what Swift services deliver
    /// meanwhile re-enters only after it, so `body` sees exactly what the code
    /// did without waiting (a test store's `send`, whatever the threads' timing).
    package func holdingReentries<R>(_ body: () throws -> R) rethrows -> R {
        held.withLock { $0.holding += 1 }
        defer {
            let released: [(any Scheduler, @Sendable () -> Void)] = held.withLock { state in
                state.holding -= 1
                guard state.holding == 0 else { return [] }
                defer { state.items = [] }
                return state.items
            }
            for (scheduler, deliver) in released { scheduler.schedule(deliver) }
            if !released.isEmpty { pending.poke() }
        }
        return try body()
    }

    /// Keeps `deliver` for later while results are held; false when they are not.
    fileprivate func hold(_ scheduler: any Scheduler, _ deliver: @escaping @Sendable () -> Void) -> Bool {
        held.withLock { state in
            guard state.holding > 0 else { return false }
            state.items.append((scheduler, deliver))
            return true
        }
    }
}

/// The order of each virtual clock's re-entries, kept while its clock lives.
enum ReentryOrders {
    struct Entry {
        weak var clock: TestScheduler?
        let order: ReentryOrder
    }
}

/// Async results held back while a test store's `send` runs.
struct HeldReentries: @unchecked Sendable {
    var holding = 0
    var items: [(any Scheduler, @Sendable () -> Void)] = []
}

/// What keeps work in Lua that it must finish before Lua calls out (`LuaBridge.noteWritesWaiting`).
package protocol WritesWaitingInLua: AnyObject, Sendable {
    /// Takes what waits in Lua; on the thread running Lua, from inside a call.
    func finishWaitingWrites()
}

private struct WeakWaitingWrites: @unchecked Sendable {
    weak var owner: (any WritesWaitingInLua)?
}
