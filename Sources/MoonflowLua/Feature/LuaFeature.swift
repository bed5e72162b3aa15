import Foundation
import LuaKit
import Synchronization
import Runtime
import Streams

/// A Lua feature running on the Swift `Interactor` loop.
///
/// The runtime owns the state table (a registry reference); `reduce` changes it
/// in place through write views that log every write. The immutable `LuaValue`
/// snapshot observers read is brought up to date from that log: it costs what
/// changed, not the size of the state, and `deliveredChanges` tells an observer
/// which paths changed. While someone listens for state events that happens after
/// every reduced mutation. While no one does, a reduce that wrote only plain
/// scalars the declared state takes leaves its writes in Lua (pending, one per
/// place), and the snapshot takes them when the drain runs out of work or when
/// `state` is read on the state executor, whichever comes first. A reducer that
/// fails (an error, a time or memory limit, a value that cannot cross) leaves the
/// state exactly as it was: the log is undone.
///
/// **Threading:** created and driven on the bridge's scheduler (the host's
/// state scheduler); `send` may be called from any thread.
package final class LuaFeature: WritesWaitingInLua, @unchecked Sendable {
    /// Everything a feature takes from its definition, replaced as a whole by a
    /// reload: the definition (whose functions are looked up by name when
    /// called), the `env` its handlers get, and what the loop needs per action.
    package struct Binding: @unchecked Sendable {
        package let definition: FeatureDefinition
        package let env: LuaRef
        /// Flatten strategies by the Lua string of the action type: nothing decoded per action.
        /// A list, not a dictionary: a feature names a few, and comparing a few short strings
        /// costs less than hashing the action's type.
        let strategies: [(type: LuaValue, strategy: FlattenStrategy)]
        /// False when some action is exhausted: actions are then reported from the loop's
        /// trace (which sees those `exhaust` drops) instead of from `handle` (cheaper).
        let reportsActionsInHandle: Bool

        package init(definition: FeatureDefinition, env: LuaRef) {
            self.definition = definition
            self.env = env
            strategies = definition.strategies.map { (type: .string(LuaString($0.key)), strategy: $0.value) }
            reportsActionsInHandle = !definition.strategies.values.contains(.exhaust)
        }
    }

    private var _binding: Binding
    /// Guards `_binding`'s replacement and off-executor reads, and holds the effect source.
    /// A POSIX mutex, inlined (`send` takes it per action); its state is not empty, as
    /// `Locked` asks.
    private let bindingLock: Locked<Shared>
    /// What `bindingLock` holds: the effect source, and the declared actions `send` checks
    /// (in place, under the lock: a copy of a `Schema` retains each of its fields).
    private struct Shared {
        var effectSource: String?
        var actions: Schema
    }
    /// Read on the state executor without the lock (only the executor writes it); `send` reads it under the lock.
    /// Borrowed, not copied: a copy of the binding retains each of its many fields, per access.
    private var binding: Binding { _read { yield _binding } }
    package var definition: FeatureDefinition { _read { yield _binding.definition } }
    var env: LuaRef { _binding.env }
    package let bridge: LuaBridge
    /// Where the definition came from (`plugins/search/init.lua`), for messages.
    package let source: String
    var stateTable: LuaRef
    /// The snapshot, behind its lock.
    private let snapshotStore: Locked<LuaValue>
    /// The last reduced state; read from any thread.
    var snapshot: LuaValue {
        get { snapshotStore.withLock { $0 } }
        set { snapshotStore.withLock { $0 = newValue } }
    }
    private var seq = 0
    private let dispatch: LuaDispatch
    /// Every event, in loop order, on the bridge's scheduler (listeners called directly).
    package let outlet = EventOutlet()
    static let typeKey: LuaValue = "type"
    /// The loop's state is the number of reduced mutations: the state itself stays in Lua
    /// and in `snapshot`, so the snapshot is the only Swift copy and changes in place.
    package private(set) var interactor: Interactor<Int, FeatureAction, FeatureMutation, LuaValue>!
    private var disposables = CompositeDisposable()
    private var tracesActions = false
    /// The host that made it, kept alive while the feature lives (`BridgedFeature.owner`); set
    /// once before the feature is handed out, never read.
    package var owner: AnyObject?
    /// Tag put on outward effects (the child's name under mf.compose); any thread.
    package var effectSource: String? {
        get { bindingLock.withLock { $0.effectSource } }
        set { bindingLock.withLock { $0.effectSource = newValue } }
    }

    /// - Parameter initial: the state to start from instead of the definition's `initial`
    ///   (a test store's `opts.state`).
    package init(definition: FeatureDefinition, bridge: LuaBridge, env: LuaRef, source: String, context: SchedulerContext,
                 initial: LuaValue? = nil) throws {
        // A state given in place of `initial` (a test store's) must fit the declaration as `initial` does.
        if let initial, let problem = definition.declaredState?.problem(with: initial, at: "state") {
            throw LuaStreamError(message: "the state given to start \(definition.name) from does not fit its `state` declaration: \(problem)",
                                 location: source)
        }
        let initial = initial ?? definition.initial
        self._binding = Binding(definition: definition, env: env)
        self.bindingLock = Locked(Shared(effectSource: nil, actions: definition.actions))
        self.bridge = bridge
        self.source = source
        self.dispatch = bridge.dispatch
        self.snapshotStore = Locked(initial)
        self.stateTable = try bridge.lua.ref(.value(initial))
        self.keptTable = try bridge.lua.ref(.value(.boolean(false)))
        interactor = Interactor<Int, FeatureAction, FeatureMutation, LuaValue>(
            initial: 0,
            context: context,
            actionType: { $0.typeName },
            // Weak: on the real clock the loop may still be draining on the state executor
            // when the last reference to the feature goes away on another thread.
            strategy: { [weak self] action in
                guard let self else { return .merge }
                return self.strategy(for: action)
            },
            handle: { [weak self] action, _ in self?.handle(action) ?? Handled.none },
            reduce: { [weak self] _, mutation in try self?.reduce(mutation) },
            step: { [weak self] action, _ in self?.step(action) ?? .handled(.none) },
            effects: { [weak self] effect, _ in self?.effect(effect) },
            settled: { [weak self] in self?.takePending() },
            outward: { [weak self] traced in
                guard let self, self.outlet.wants(.effect) else { return }
                self.delivering(cause: traced.action, id: traced.actionID) { self.outlet.send(.effect, .effect(traced.value, from: self.effectSource)) }
            },
            // Only checkedEffects makes a list of effects: a single effect always has its `type`.
            split: { effect in
                guard case .table(let table) = effect, table.hash.isEmpty, table.array.count > 1 else { return nil }
                return table.array
            })
        traceActionsIfNeeded()
        try registerShape(of: definition)
        disposables += interactor.errors.observe { [weak self] failure in
            guard let self else { return }
            let stage: FeatureError.Stage = switch failure.stage {
            case .handle: .handle
            case .reduce: .reduce
            case .effect: .effect
            }
            self.delivering(cause: failure.action, id: failure.actionID) { self.report(failure.error, stage: stage, action: failure.action.value) }
        }
    }

    /// How the handler streams of `action`'s type combine (`.merge` unless the definition says).
    private func strategy(for action: FeatureAction) -> FlattenStrategy {
        let strategies = binding.strategies
        if strategies.isEmpty { return .merge }
        guard let type = action.typeKey else { return .merge }
        for entry in strategies where entry.type == type { return entry.strategy }
        return .merge
    }

    /// Every action the loop takes, including those `exhaust` then drops: from the
    /// loop's action trace once some action is exhausted, else from `handle`.
    private func traceActionsIfNeeded() {
        guard !binding.reportsActionsInHandle, !tracesActions else { return }
        tracesActions = true
        disposables += interactor.actions.observe { [weak self] traced in
            guard let self, !self.binding.reportsActionsInHandle else { return }
            self.delivering(cause: traced.value, id: traced.actionID) { self.report(traced.value) }
        }
    }

    /// Swaps in new code. Work in flight keeps running, and its mutations meet
    /// the new reducer (they are plain data; types the new code does not declare
    /// are refused as usual when they arrive), except work started by an action
    /// type the new code no longer declares: that is cancelled. With
    /// `cancellingAll` (a hot restart), every flight is cancelled. With
    /// `migrated`, the state becomes it and a state event follows. Call on the
    /// state executor.
    /// - Returns: the work kept and cancelled (`search #3`).
    /// - Throws: when `migrated` cannot become a Lua table (nothing changes then).
    @discardableResult
    package func rebind(_ binding: Binding, migrated: LuaValue?, cancellingAll: Bool = false) throws -> (kept: [String], cancelled: [String]) {
        let table = try migrated.map { try bridge.lua.ref(.value($0)) }
        let declared = cancellingAll ? [] : Set(binding.definition.actions.names)
        var kept: [String] = [], cancelled: [String] = []
        for flight in interactor.inFlight {
            let name = "\(flight.actionType) #\(flight.actionID)"
            if declared.contains(flight.actionType) { kept.append(name) } else { cancelled.append(name) }
        }
        for type in Set(interactor.inFlight.map(\.actionType)) where !declared.contains(type) { interactor.cancel(actionType: type) }
        try registerShape(of: binding.definition)
        bindingLock.withLock { shared in
            _binding = binding
            shared.actions = binding.definition.actions
        }
        traceActionsIfNeeded()
        if let migrated, let table {
            // The writes waiting in Lua were to the old table: taken into the snapshot, so the
            // state event says what changed from the state as it really was.
            if hasPending { _ = takePending() }
            hasPending = false
            let previous = snapshot
            stateTable = table
            snapshot = migrated
            // One change at the root, from the old state: a printer shows the fields that
            // changed (`count: 5 → 0` on a restart), not the whole new state.
            deliveringChanges = [StateChange(path: [], old: previous, new: migrated)]
            defer { deliveringChanges = nil }
            outlet.send(.state(migrated, seq: seq))
        }
        return (kept, cancelled)
    }

    /// Sites (`file:line`) already warned of a field the inferred state lacks: once each.
    private var warnedSites: Set<String> = []

    /// Gives the definition's views the state's shape: a field a declared `state` lacks
    /// fails where it is read or written; one the state inferred from `initial` lacks is
    /// logged once per site when read (`SchemaType.viewShape`, dispatch.lua's `unknown`,
    /// which calls `report(place, key, level, fields...)` and raises what it returns).
    private func registerShape(of definition: FeatureDefinition) throws {
        let shape = definition.stateType.viewShape
        let strict = definition.declaredState != nil
        let report: LuaFunction = { [weak self] slots in
            let place = try slots.string(1), key = try slots.string(2)
            let fields = try (3 < slots.count ? Array(4...slots.count) : []).map { try slots.string($0) }
            if strict { return [.value(.string(LuaString(SchemaType.noField(key, in: place, fields: fields))))] }
            guard let self else { return [] }
            let warning = "\(place) has no field '\(key)' (\(SchemaType.fieldHint(key, fields: fields))): `initial` lacks it, so it reads nil; declare the feature's `state` (`moonflow types --lua` prints one) to make this an error"
            let site = slots.callerLocation(level: Int(try slots.integer(3)))
            if self.warnedSites.insert(site ?? warning).inserted {
                self.log(self.bridge.relative(warning), location: site.map(self.bridge.relative))
            }
            return []
        }
        try bridge.lua.call(dispatch.setShape, [.ref(definition.table), .value(shape), .value(.boolean(strict)), .function(report)]) { _ in () }
        try bridge.lua.call(dispatch.setMutationShapes, [.ref(definition.table), .value(definition.mutations.flat.luaTable)]) { _ in () }
    }

    deinit {
        disposables.dispose()
        interactor?.dispose()
        outlet.finish()
    }

    /// Stops the feature: cancels everything in flight, ignores later actions,
    /// and ends its streams (`for await` loops over them finish). Idempotent.
    package func dispose() {
        interactor.dispose()
        outlet.finish()
    }

    /// Whether `dispose()` was called.
    package var isDisposed: Bool { outlet.isFinished }

    /// The current state snapshot: every reduce so far. While writes wait in Lua (no one
    /// listens for state events), reading it brings them in: at once on the thread whose
    /// reduces wrote them (the loop's, mid-drain or mid-reduce), else on the state executor
    /// (a reader on another thread waits for it, as `send(json:)` does). Not touched: a
    /// stuck state (a call that ran on past its limit in code that cannot be interrupted),
    /// and one without an executor of its own (a virtual clock) that another thread is
    /// driving right now; the snapshot is then the one taken last.
    package var state: LuaValue {
        let holder = pendingThread.load(ordering: .acquiring)
        if holder != 0, !bridge.lua.isStuck {
            if holder == LuaFeature.currentThread {
                takePending()
            } else if bridge.performer != nil {
                bridge.performQuietly { takePending() }
            }
        }
        return snapshot
    }

    private var deliveringCause: FeatureAction?
    private var deliveringCauseID = 0

    private func delivering(cause: FeatureAction, id: Int, _ body: () -> Void) {
        deliveringCause = cause
        deliveringCauseID = id
        defer { deliveringCause = nil }
        body()
    }

    /// Which action `eventCause` is when two are equal (two `load`s in flight): its number in
    /// this feature's loop, as text; or the event's own action's, for an action event. Read it
    /// from an `outlet` listener, beside `eventCause`.
    package var eventCauseID: String? {
        if deliveringCause != nil { return String(deliveringCauseID) }
        let id = interactor.actionIDAtWork
        return id > 0 ? String(id) : nil
    }

    /// The action behind the event being delivered right now: a mutation's, a
    /// state's, an effect's or an error's. Read it from an `outlet` listener.
    package var eventCause: LuaValue? {
        if let deliveringCause { return deliveringCause.value }
        // Inside a step's handle the loop already says the action is being reduced: as for a
        // `handle` call of its own, an event from there (a log) has no cause.
        if stepping, bridge.lua.exchangeCounter(dispatch.stepStage, at: 1) == StepStage.handling.rawValue { return nil }
        return interactor.actionBeingReduced?.value
    }

    /// The handler and effect streams still running, each with the action that started it.
    package var inFlight: [FeatureFlight] {
        interactor.inFlight.map { flight in
            switch flight.kind {
            case .handler:
                FeatureFlight(action: flight.action.value, what: "the stream handle returned", actionID: flight.actionID)
            case .effect(let e):
                FeatureFlight(action: flight.action.value, what: "the handler of effect '\(e["type"]?.stringValue ?? "?")'",
                              actionID: flight.actionID, tag: "effect \(e["type"]?.stringValue ?? "?")")
            case .queued:
                FeatureFlight(action: flight.action.value, what: "a queued (concat) handling", actionID: flight.actionID, tag: "queued")
            }
        }
    }

    /// Emits the initial state event (seq 0). The host calls it once observers are attached.
    package func start() {
        // On the state executor, like every other event, whichever thread calls it.
        bridge.performQuietly { outlet.send(.state(state, seq: 0)) }
    }

    /// Validates `action` against the declared actions and queues it.
    ///
    /// - Throws: `SchemaError` naming the action, the field and the expected type;
    ///   nothing is queued and the state is not touched.
    package func send(_ action: LuaValue) throws {
        try refusing(action) {
            _ = try bindingLock.withLock { try $0.actions.validate(action) }  // in place: no copy of the schema
            interactor.send(.value(action))
        }
    }

    /// Checks `action` as `send` would and throws what it would throw; queues nothing.
    /// (`moonflow run` records an input only once it is sure the feature takes it.)
    package func check(_ action: LuaValue) throws {
        try refusing(action) { _ = try bindingLock.withLock { try $0.actions.validate(action) } }
    }

    /// Runs a send: what it throws (a refused or malformed action) is a `FeatureError` of
    /// stage `.send`, and a disposed feature refuses every action.
    private func refusing(_ action: LuaValue?, _ body: () throws -> Void) throws {
        guard !isDisposed else {
            // Any thread may send: the name is read under the lock a reload's rebind takes.
            let name = bindingLock.withLock { _ in _binding.definition.name }
            throw FeatureError(stage: .send, action: action, message: "feature '\(name)' was disposed; it takes no more actions (load it again)")
        }
        guard !bridge.lua.isStuck else { throw FeatureError.stuck(feature: bindingLock.withLock { _ in _binding.definition.name }, action: action) }
        do { try body() } catch { throw FeatureError(refused: error, action: action) }
    }

    /// Parses `json` straight into a Lua table, checks it against the declared actions and
    /// queues it: `handle` gets that very table, and no `LuaValue` is made unless someone
    /// asks for the action (an action event, an error, `inFlight`).
    ///
    ///     try feature.send(json: #"{"type":"add","title":"milk"}"#)
    ///
    /// A flat action (`type` and fields of plain values) is checked in place; any other is
    /// copied once to be checked in full, and still handled as the table parsed.
    ///
    /// - Throws: `JSONError` with the line and column of a mistake in the text, or
    ///   `SchemaError` naming the action, the field and the expected type; nothing is
    ///   queued and the state is not touched.
    package func send(json: String) throws {
        var text = json
        try refusing(nil) { try text.withUTF8 { try send(jsonBuffer: UnsafeRawBufferPointer($0)) } }
    }

    /// Parses the UTF-8 `json` straight into a Lua table and queues it: `send(json:)` for bytes.
    package func send(json: [UInt8]) throws {
        try refusing(nil) { try json.withUnsafeBytes { try send(jsonBuffer: $0) } }
    }

    private func send(jsonBuffer: UnsafeRawBufferPointer) throws {
        let action: FeatureAction = try bridge.perform {
            let actions = definition.actions
            return try bridge.lua.withJSON(jsonBuffer) { slots in
                if let type = slots.matchedType(1, actions.flat) {
                    return .table(LuaTableAction(type: type, table: try slots.ref(1), bridge: bridge))
                }
                let value = try slots.value(1, path: "action")
                let type = try actions.validate(value)
                return .table(LuaTableAction(type: .string(type), table: try slots.ref(1), bridge: bridge, value: value))
            }
        }
        interactor.send(action)
    }

    /// Cancels in-flight work (all of it, or that of one action type).
    package func cancel(actionType: String? = nil) {
        if let actionType { interactor.cancel(actionType: actionType) } else { interactor.cancelAll() }
    }

    /// Whether the loop has nothing queued or running.
    package var isIdle: Bool { interactor.isIdle }


    // MARK: - The loop's three callbacks

    /// `file:line` of the definition's function at `key` (`handle`, `effects.fetch`), else the file.
    func location(_ key: String) -> String { definition.locations[key] ?? source }

    /// Checks a mutation where it was produced, so an undeclared one names that function.
    private func validated(_ mutation: LuaValue, from key: String) throws -> LuaValue {
        do { try definition.mutations.validate(mutation) } catch let e as SchemaError {
            throw LuaStreamError(message: e.message, location: location(key))
        }
        return mutation
    }

    /// A handler's or effect handler's result: nothing, a mutation, or a stream of checked mutations.
    /// A mutation table the in-place check vouches for stays in Lua (`keep`); any other
    /// is copied out and validated in full.
    private func mutations(from key: String, _ slots: LuaSlots, what: String,
                           keep: ((LuaSlots) -> FeatureMutation?)? = nil) throws -> Handled<FeatureMutation> {
        switch slots.returned(1) {
        case .nothing:
            return .none
        case .stream(let producer):
            return .stream(producer.map { [weak self] m in .value(try self?.validated(m, from: key) ?? m) })
        case .plain where slots.isTable(1):
            if let kept = keep?(slots) { return .one(kept) }
            return .one(.value(try validated(try slots.value(1, path: "mutation"), from: key)))
        case .plain:
            break
        }
        throw LuaStreamError(message: "\(what) must return nothing, a mutation table or a stream (got \(slots.typeName(1)))", location: location(key))
    }

    /// The mutation whose table is in `keptTable`, not reduced yet.
    private var pendingKept: KeptMutation?
    /// A registry slot holding the table of `pendingKept`.
    private let keptTable: LuaRef

    /// Keeps the table at slot 1 in `keptTable` when the in-place check vouches for it.
    private func keep(_ slots: LuaSlots) -> FeatureMutation? {
        guard slots.matches(1, definition.mutations.flat), slots.store(1, into: keptTable) else { return nil }
        let kept = KeptMutation()
        pendingKept = kept
        return .kept(kept)
    }

    /// Copies the table in `keptTable` out for the mutation not reduced yet, freeing the slot.
    private func releaseKeptSlot() {
        guard let pending = pendingKept else { return }
        pendingKept = nil
        pending.value = try? bridge.lua.value(of: keptTable, path: "mutation")
    }

    private func handle(_ action: FeatureAction) -> Handled<FeatureMutation> {
        if binding.reportsActionsInHandle { report(action) }
        releaseKeptSlot()
        do {
            return try bridge.lua.call(dispatch.handle, [.ref(definition.table), action.pushed, .ref(stateTable), .ref(env)]) { slots in
                try mutations(from: "handle", slots, what: "\(definition.name).handle", keep: keep)
            }
        } catch {
            return .stream(.fail(LocatedError(error, at: location("handle"))))
        }
    }

    /// An action event: a table action is read into a value only when someone listens.
    private func report(_ action: FeatureAction) {
        switch action {
        case .value(let v): outlet.send(.action(v))
        case .table(let t): if outlet.wants(.action) { outlet.send(.action(t.value)) }
        }
    }

    /// How `reduce` gets `mutation` (the very table `handle` returned when it is still
    /// kept), and the mutation as a value when a listener wants mutation events.
    private func pushing(_ mutation: FeatureMutation) throws -> (LuaPush, LuaValue?) {
        switch mutation {
        case .value(let v):
            return (.value(v), v)
        case .kept(let kept):
            if let v = kept.value { return (.value(v), v) }
            guard kept === pendingKept else {
                throw LuaStreamError(message: "internal: a kept mutation was lost before reduce", location: location("handle"))
            }
            pendingKept = nil
            return (.ref(keptTable), outlet.wants(.mutation) ? try bridge.lua.value(of: keptTable, path: "mutation") : nil)
        }
    }

    private func reduce(_ mutation: FeatureMutation) throws -> LuaValue? {
        // Before the call: a failure here must not undo the last reduce's writes.
        let (pushed, value): (LuaPush, LuaValue?)
        do { (pushed, value) = try pushing(mutation) } catch { throw LocatedError(error, at: location("reduce")) }
        do {
            let (changes, effect) = try bridge.lua.call(dispatch.reduce, [.ref(definition.table), .ref(stateTable), pushed, lazy]) { slots in
                try reduced(slots)
            }
            deliver(changes, mutation: value)
            return effect
        } catch {
            rollBack()
            throw LocatedError(error, at: location("reduce"))
        }
    }

    /// dispatch.lua's `lazy` argument: with no one listening for states, a reduce's writes may wait in Lua.
    private var lazy: LuaPush { .value(.boolean(!outlet.wants(.state))) }

    /// Whether a `step` call is running (`eventCause` asks Lua which half it is in).
    private var stepping = false

    private enum StepOutcome {
        case handled(Handled<FeatureMutation>)
        case reduced(changes: [StateChange]?, effect: LuaValue?, mutation: LuaValue?)
    }

    /// `handle` and `reduce` in one protected call (dispatch.lua's `step`) when `handle`
    /// returns one mutation the flat check vouches for; anything else (nothing, a stream,
    /// a mutation to check in full) goes on as a `handle` call's result. Errors keep their
    /// stage: one raised in reduce (or in reading what it returned) rolls the state back.
    private func step(_ action: FeatureAction) -> Stepped<FeatureMutation, LuaValue> {
        if binding.reportsActionsInHandle { report(action) }
        releaseKeptSlot()
        var readingReduce = false
        stepping = true
        let outcome: StepOutcome
        do {
            defer { stepping = false }
            outcome = try bridge.lua.call(dispatch.step, [.ref(definition.table), action.pushed, .ref(stateTable), .ref(env), lazy]) { slots in
                guard slots.count > 1 else {
                    return .handled(try mutations(from: "handle", slots, what: "\(definition.name).handle", keep: keep))
                }
                readingReduce = true
                let mutation = outlet.wants(.mutation) ? try slots.value(1, path: "mutation") : nil
                let (changes, effect) = try reduced(slots.dropping(2))
                return .reduced(changes: changes, effect: effect, mutation: mutation)
            }
        } catch {
            if readingReduce || bridge.lua.exchangeCounter(dispatch.stepStage, at: 1, with: StepStage.outside.rawValue) == StepStage.reducing.rawValue {
                rollBack()
                return .failed(LocatedError(error, at: location("reduce")))
            }
            return .handled(.stream(.fail(LocatedError(error, at: location("handle")))))
        }
        switch outcome {
        case .handled(let handled):
            return .handled(handled)
        case .reduced(let changes, let effect, let mutation):
            deliver(changes, mutation: mutation)
            return .reduced(effect: effect)
        }
    }

    /// Reads what dispatch.lua's `reduce` returned (the state, the effect, how the state
    /// changed and the writes), brings the snapshot up to date (the writes still pending
    /// first: Lua lists them in front) and checks the declared state and outputs, or, when
    /// the writes wait in Lua (`ReduceOutcome.pending`), only notes that they do. Throws (the caller rolls back)
    /// when something does not fit.
    private func reduced(_ slots: LuaSlots) throws -> (changes: [StateChange]?, effect: LuaValue?) {
        guard slots.isTable(1) else {
            throw LuaStreamError(message: "\(definition.name).reduce must return the state table (got \(slots.typeName(1))); end it with `return state`", location: location("reduce"))
        }
        var effect: LuaValue? = nil
        if slots.count >= 2 && !slots.isNil(2) {
            effect = try checkedEffects(try slots.value(2, path: "effect"))
        }
        let code = try slots.integer(3)
        guard let outcome = ReduceOutcome(rawValue: Int(code)) else {
            throw LuaStreamError(message: "internal: dispatch.lua's reduce returned the outcome \(code), which ReduceOutcome does not name", location: location("reduce"))
        }
        if outcome == .pending {
            hasPending = true
            bridge.noteWritesWaiting(self)  // taken before Lua calls out into code that may block
            return (nil, effect)
        }
        // Lua handed over the pending writes with these (a failure puts them back): none wait
        // once the snapshot has taken them.
        // In place (the common case): the snapshot takes the written entries, nothing else.
        if outcome == .inPlace && !owesWholeRead {
            let count = Int(try slots.integer(5))
            // Under the lock, with no other reference taken: changed in place.
            if let changes = try snapshotStore.withLock({ snapshot throws -> [StateChange]? in
                let changes = try slots.applyStateWrites(4, count: count, root: "state", to: &snapshot)
                // A declared state refuses a write that breaks it: the snapshot goes back here, the table below.
                if let changes, let declared = binding.definition.declaredState {
                    for change in changes {
                        if let problem = declared.problem(writing: change.new, at: change.path, root: "state") {
                            revert(changes, in: &snapshot)
                            throw StateTypeError(problem: problem)
                        }
                    }
                }
                return changes
            }) {
                hasPending = false
                return (changes, effect)
            }
        }
        // Another table, one table in two places, or a view inside new data: read it all,
        // and make the Lua table anew from the copy unless it is a plain new table.
        let previous = snapshot
        let (whole, plain) = try slots.stateValue(1, refreshing: previous, path: "state")
        if let problem = binding.definition.declaredState?.problem(with: whole, at: "state") { throw StateTypeError(problem: problem) }
        stateTable = outcome == .anotherTable && plain ? try slots.ref(1) : try bridge.lua.ref(.value(whole))
        snapshot = whole
        hasPending = false
        owesWholeRead = false
        return ([StateChange(path: [], old: previous, new: whole)], effect)
    }

    /// What `reduce` returned beside the state: one effect (a table with a string `type`), or
    /// a list of them (`{ e1, e2 }`, routed in order: `InteractorLoop.route`; an empty list is
    /// none). Each outward one (no handler here takes it) meets the declared `outputs`, as
    /// actions meet `actions`. Throws naming the item that does not fit.
    private func checkedEffects(_ value: LuaValue) throws -> LuaValue? {
        guard case .table(let table) = value else {
            throw LuaStreamError(message: "an effect must be a table with a string 'type', or a list of them (got \(value.typeName) \(value))", location: location("reduce"))
        }
        if table["type"].isNil, table.hash.isEmpty {
            // A list: `{}` is no effect, `{ e }` is e.
            for (index, item) in table.array.enumerated() { try checkEffect(item, index: index + 1) }
            switch table.array.count {
            case 0: return nil
            case 1: return table.array[0]
            default: return value
            }
        }
        try checkEffect(value, index: nil)
        return value
    }

    private func checkEffect(_ effect: LuaValue, index: Int?) throws {
        let which = index.map { "effect \($0) of the list reduce returned" } ?? "an effect"
        guard case .string(let type) = effect["type"] ?? .nil else {
            let hint = index == nil ? ", or a list of them" : ""
            throw LuaStreamError(message: "\(which) must be a table with a string 'type'\(hint) (got \(effect))", location: location("reduce"))
        }
        if let outputs = binding.definition.outputs, !binding.definition.effectHandlers.contains(type.description) {
            do {
                try outputs.validate(effect)
            } catch let error as SchemaError where index != nil {
                throw SchemaError("\(which): \(error.message)")
            }
        }
    }

    /// The events of a reduce that held: the mutation (when asked for) and the state.
    private func deliver(_ changes: [StateChange]?, mutation value: LuaValue?) {
        // A listener that came while the reduce ran gets the state with what waited in Lua.
        var changes = changes
        if hasPending, outlet.wants(.state) { changes = takePending() }
        deliveringChanges = changes
        defer { deliveringChanges = nil }
        seq += 1
        if let value { outlet.send(.mutation, .mutation(value, seq: seq)) }
        outlet.send(.state, .state(snapshot, seq: seq))
    }

    /// Writes of reduces that returned `pending` wait in Lua (or `owesWholeRead`). Set on the thread
    /// running the loop, read anywhere: a reader that learned of a reduce (its effect, say)
    /// sees what it set.
    private var hasPending: Bool {
        get { pendingThread.load(ordering: .acquiring) != 0 }
        set { pendingThread.store(newValue ? LuaFeature.currentThread : 0, ordering: .releasing) }
    }
    /// The thread that set `hasPending` (the loop's, which may read Lua at once), or 0.
    private let pendingThread = Atomic<UInt>(0)
    private static var currentThread: UInt {
        #if canImport(Darwin)
        unsafeBitCast(pthread_self(), to: UInt.self)  // a pointer there
        #else
        pthread_self()
        #endif
    }
    /// Writes were taken from Lua but could not be applied one by one while a reduce ran:
    /// the snapshot is read whole next time (it does not happen: no write moved a table).
    private var owesWholeRead = false

    /// Brings the snapshot up to date with the writes waiting in Lua (on the state executor).
    /// - Returns: the changes, in the order written (one at the empty path when the state
    ///   was read whole), or nil when nothing waited.
    @discardableResult
    private func takePending() -> [StateChange]? {
        guard hasPending else { return nil }
        hasPending = false
        var changes: [StateChange]?
        var reducing = false
        do {
            try bridge.lua.call(dispatch.takePending, []) { slots in
                reducing = (try? slots.value(3)) == .boolean(true)
                guard !owesWholeRead else { return }
                let count = Int(try slots.integer(2))
                changes = try snapshotStore.withLock { snapshot in try slots.applyStateWrites(1, count: count, root: "state", to: &snapshot) }
            }
        } catch {}
        if let changes { return changes }
        // Read whole, once no reduce is running (the tables hold its writes so far).
        owesWholeRead = true
        hasPending = true
        guard !reducing, let now = try? bridge.lua.value(of: stateTable, path: "state") else { return nil }
        let previous = snapshot
        snapshot = now
        owesWholeRead = false
        hasPending = false
        return [StateChange(path: [], old: previous, new: now)]
    }

    /// The bridge's callout: before Lua calls out into code that may block, the writes that
    /// wait in Lua go into the snapshot, so a state stuck there keeps every finished reduce.
    package func finishWaitingWrites() { takePending() }

    /// Undoes what a failed reduce wrote in place.
    private func rollBack() {
        do { try bridge.lua.call(dispatch.undo, []) { _ in () } } catch {
            try? bridge.lua.replace(stateTable, with: snapshot)
        }
    }

    private var deliveringChanges: [StateChange]?

    /// The state written as JSON (sorted keys) straight from the Lua table, without a
    /// `LuaValue` copy: the same text as `state.json()`. Call on the state executor, as
    /// an `outlet` listener does while a `.state` event is delivered (the table may have
    /// moved on by the time another thread reads it).
    /// - Throws: `LuaError.conversion` naming the path of what JSON cannot hold.
    package func stateJSON() throws -> [UInt8] { try bridge.lua.jsonBytes(of: stateTable, root: "state") }

    /// The state table read whole and afresh, not from the snapshot (tests compare the two).
    /// Call on the state executor.
    package func readStateTable() throws -> LuaValue { try bridge.lua.value(of: stateTable, path: "state") }

    /// What the reduce behind the `.state` event being delivered right now changed, path
    /// by path, in the order written (one change at the empty path when the whole state was
    /// read again: the reducer returned another table). Nil outside a `.state` delivery.
    /// Read it from an `outlet` listener: an observer that wants one field looks at these
    /// paths instead of comparing states.
    package var deliveredChanges: [StateChange]? { deliveringChanges }

    private func effect(_ effect: LuaValue) -> Producer<FeatureMutation>? {
        guard let type = effect["type"]?.stringValue, definition.effectHandlers.contains(type) else { return nil }
        let key = "effects.\(type)"
        do {
            let handled = try bridge.lua.call(dispatch.effect, [.ref(definition.table), .value(.string(LuaString(type))), .value(effect), .ref(stateTable), .ref(env)]) { slots in
                try mutations(from: key, slots, what: key)
            }
            switch handled {
            case .none: return .empty()
            case .one(let m): return .just(m)
            case .many(let ms): return .from(ms)
            case .stream(let s): return s
            }
        } catch {
            return .fail(LocatedError(error, at: location(key)))
        }
    }

    private var deliveringError: FeatureError?

    /// The error behind the `.error` event being delivered right now, with its
    /// stage, action and underlying Swift error. Read it from an `outlet` listener.
    package var eventError: FeatureError? { deliveringError }

    private func report(_ error: any Error, stage: FeatureError.Stage, action: LuaValue?) {
        let (message, location) = LuaErrorReport.describe(error, fallback: source)
        deliveringError = bridge.relative(FeatureError.from(error, stage: stage, action: action, fallback: source))
        defer { deliveringError = nil }
        outlet.send(.error(message: bridge.relative(message), location: location.map(bridge.relative)))
    }

    /// Reports an error that happened outside the loop (a failed reload) as an `.error` event.
    package func report(outside error: any Error, stage: FeatureError.Stage) {
        report(error, stage: stage, action: nil)
    }

    /// Reports a log line (an interactor's failure) as a `.log` event.
    package func log(_ message: String, location: String?) {
        outlet.send(.log(message: message, location: location))
    }
}

/// A reduce that left the state outside its declared `state`: the state is rolled back.
struct StateTypeError: Error, CustomStringConvertible {
    let problem: String
    var description: String { "\(problem), as the feature's `state` declares it; the state is rolled back" }
}
