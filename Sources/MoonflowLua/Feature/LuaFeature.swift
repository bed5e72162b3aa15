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

    var _binding: Binding
    /// Guards `_binding`'s replacement and off-executor reads, and holds the effect source.
    /// A POSIX mutex, inlined (`send` takes it per action); its state is not empty, as
    /// `Locked` asks.
    let bindingLock: Locked<Shared>
    /// What `bindingLock` holds: the effect source, and the declared actions `send` checks
    /// (in place, under the lock: a copy of a `Schema` retains each of its fields).
    struct Shared {
        var effectSource: String?
        var actions: Schema
    }
    /// Read on the state executor without the lock (only the executor writes it); `send` reads it under the lock.
    /// Borrowed, not copied: a copy of the binding retains each of its many fields, per access.
    var binding: Binding { _read { yield _binding } }
    package var definition: FeatureDefinition { _read { yield _binding.definition } }
    var env: LuaRef { _binding.env }
    package let bridge: LuaBridge
    /// Where the definition came from (`plugins/search/init.lua`), for messages.
    package let source: String
    var stateTable: LuaRef
    /// The snapshot, behind its lock.
    let snapshotStore: Locked<LuaValue>
    /// The last reduced state; read from any thread.
    var snapshot: LuaValue {
        get { snapshotStore.withLock { $0 } }
        set { snapshotStore.withLock { $0 = newValue } }
    }
    var seq = 0
    let dispatch: LuaDispatch
    /// Every event, in loop order, on the bridge's scheduler (listeners called directly).
    package let outlet = EventOutlet()
    static let typeKey: LuaValue = "type"
    /// The loop's state is the number of reduced mutations: the state itself stays in Lua
    /// and in `snapshot`, so the snapshot is the only Swift copy and changes in place.
    package private(set) var interactor: Interactor<Int, FeatureAction, FeatureMutation, LuaValue>!
    private var disposables = CompositeDisposable()
    private var tracesActions = false
    /// Called each time the loop runs out of work, on the state executor (set by the
    /// `mf.compose` this feature is a child of, whose `react` waits for the step to end).
    package var afterSettled: (() -> Void)?
    /// The host that made it, kept alive while the feature lives (`BridgedFeature.owner`); set
    /// once before the feature is handed out, never read.
    package var owner: AnyObject?
    /// Tag put on outward effects (the child's name under mf.compose); any thread.
    package var effectSource: String? {
        get { bindingLock.withLock { $0.effectSource } }
        set { bindingLock.withLock { $0.effectSource = newValue } }
    }

    // What the loop, the state write-back and the events keep between calls (their files:
    // LuaFeature+Loop, +StateWrites, +Events).
    var deliveringCause: FeatureAction?
    var deliveringCauseID = 0
    var deliveringError: FeatureError?
    /// The mutation whose table is in `keptTable`, not reduced yet.
    var pendingKept: KeptMutation?
    /// A registry slot holding the table of `pendingKept`.
    let keptTable: LuaRef
    /// Whether a `step` call is running (`eventCause` asks Lua which half it is in).
    var stepping = false
    /// The thread that set `hasPending` (the loop's, which may read Lua at once), or 0.
    let pendingThread = Atomic<UInt>(0)
    /// Writes were taken from Lua but could not be applied one by one while a reduce ran:
    /// the snapshot is read whole next time (it does not happen: no write moved a table).
    var owesWholeRead = false
    var deliveringChanges: [StateChange]?
    /// The running `env.cancellable` streams, by id (LuaFeature+Cancellation).
    let cancellables = Cancellables()
    /// The action whose `handle` runs now, with its number (a `cancel` stream's cause).
    var handling: (action: FeatureAction, id: Int)?

    /// - Parameter initial: the state to start from instead of the definition's `initial`
    ///   (a test store's `opts.state`).
    package init(
        definition: FeatureDefinition, bridge: LuaBridge, env: LuaRef, source: String, context: SchedulerContext,
        initial: LuaValue? = nil
    ) throws {
        // A state given in place of `initial` (a test store's) must fit the declaration as `initial` does.
        if let initial, let problem = definition.declaredState?.problem(with: initial, at: "state") {
            throw LuaStreamError(
                message:
                    "the state given to start \(definition.name) from does not fit its `state` declaration: \(problem)",
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
            settled: { [weak self] in
                _ = self?.takePending()
                self?.afterSettled?()
            },
            outward: { [weak self] traced in
                guard let self, self.outlet.wants(.effect) else { return }
                // A listener that reads `state` from another thread on an effect sees the reduce
                // that returned it: the writes waiting in Lua are taken first.
                _ = self.takePending()
                self.delivering(cause: traced.action, id: traced.actionID) {
                    self.outlet.send(.effect, .effect(traced.value, from: self.effectSource))
                }
            },
            // Only checkedEffects makes a list of effects: a single effect always has its `type`.
            split: { effect in
                guard case .table(let table) = effect, table.hash.isEmpty, table.array.count > 1 else { return nil }
                return table.array
            })
        traceActionsIfNeeded()
        try registerShape(of: definition)
        try installCancellation(in: env)
        disposables += interactor.errors.observe { [weak self] failure in
            guard let self else { return }
            let stage: FeatureError.Stage =
                switch failure.stage {
                case .handle: .handle
                case .reduce: .reduce
                case .effect: .effect
                }
            self.delivering(cause: failure.action, id: failure.actionID) {
                self.report(failure.error, stage: stage, action: failure.action.value)
            }
        }
    }

    /// How the handler streams of `action`'s type combine (`.merge` unless the definition says).
    func strategy(for action: FeatureAction) -> FlattenStrategy {
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
    package func rebind(
        _ binding: Binding, migrated: LuaValue?, cancellingAll: Bool = false
    ) throws -> (kept: [String], cancelled: [String]) {
        let table = try migrated.map { try bridge.lua.ref(.value($0)) }
        let declared = cancellingAll ? [] : Set(binding.definition.actions.names)
        var kept: [String] = [], cancelled: [String] = []
        for flight in interactor.inFlight {
            let name = "\(flight.actionType) #\(flight.actionID)"
            if declared.contains(flight.actionType) { kept.append(name) } else { cancelled.append(name) }
        }
        for type in Set(interactor.inFlight.map(\.actionType)) where !declared.contains(type) {
            interactor.cancel(actionType: type)
        }
        try registerShape(of: binding.definition)
        if binding.env != _binding.env { try installCancellation(in: binding.env) }
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
            let warning =
                "\(place) has no field '\(key)' (\(SchemaType.fieldHint(key, fields: fields))): `initial` lacks it, so it reads nil; declare the feature's `state` (`moonflow types --lua` prints one) to make this an error"
            let site = slots.callerLocation(level: Int(try slots.integer(3)))
            if self.warnedSites.insert(site ?? warning).inserted {
                self.log(self.bridge.relative(warning), location: site.map(self.bridge.relative))
            }
            return []
        }
        try bridge.lua.call(
            dispatch.setShape, [.ref(definition.table), .value(shape), .value(.boolean(strict)), .function(report)]
        ) { _ in () }
        try bridge.lua.call(
            dispatch.setMutationShapes, [.ref(definition.table), .value(definition.mutations.flat.luaTable)]
        ) { _ in () }
    }

    deinit {
        disposables.dispose()
        interactor?.dispose()
        outlet.finish()
    }

    /// Stops the feature: cancels everything in flight, ignores later actions,
    /// and ends its streams (`for await` loops over them finish). Idempotent.
    /// From another thread than the state executor's, a step running there now finishes and
    /// its events (its state) are still delivered; the events end after it, so a view model
    /// and `state` agree.
    package func dispose() {
        interactor.dispose()
        guard !bridge.isOnExecutor else { return outlet.finish() }
        bridge.scheduler.schedule { [outlet] in outlet.finish() }
    }

    /// Whether `dispose()` was called (the loop says so at once; the events may end later).
    package var isDisposed: Bool { interactor.isDisposed }

    /// The current state snapshot: every reduce so far, read on the state executor. While
    /// writes wait in Lua (no one listens for state events), reading it there brings them in
    /// (on the thread whose reduces wrote them: the loop's, mid-drain or mid-reduce). From any
    /// other thread it never waits: it is the state as of the end of the last drain (the loop
    /// takes waiting writes whenever it runs out of work), so a reader cannot deadlock with an
    /// observer that waits for it. Not touched either: a stuck state (a call that ran on past
    /// its limit in code that cannot be interrupted).
    package var state: LuaValue {
        let holder = pendingThread.load(ordering: .acquiring)
        if holder != 0, holder == LuaFeature.currentThread, !bridge.lua.isStuck {
            takePending()
        }
        return snapshot
    }

    /// Emits the initial state event (seq 0). The host calls it once observers are attached.
    package func start() {
        // On the state executor, like every other event, whichever thread calls it.
        bridge.performQuietly { outlet.send(.state(state, seq: 0)) }
    }
}
