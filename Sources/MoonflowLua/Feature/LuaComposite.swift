import Foundation
import LuaKit
import Streams

/// `mf.compose{ name, children, route, combine [, actions, mapEffect] }`: a parent over
/// named child features (the seeds' UserInteractor over Profile and Posts, and
/// VIPER(RS)'s reducer folding child states into the form's state).
///
/// - `actions`, when declared (as a feature declares them), checks each action before `route`.
/// - `route(action, state)` returns `childName, childAction` (the parent's
///   current state is there to decide with), or several such pairs to send
///   one action to several children in order, or nil to drop it (a `log`
///   event says so).
/// - After every child state change, `combine(childStates)` folds the children's
///   states (a table by child name) into the parent's state.
/// - Child effects go out unchanged with the child's name as their source,
///   unless `mapEffect(childName, effect)` returns a replacement (or nil to drop it).
///
/// **Threading:** like `LuaFeature`, driven on the host's state executor.
package final class LuaComposite: BridgedFeature, @unchecked Sendable {
    package private(set) var definition: FeatureDefinition
    package let bridge: LuaBridge
    package let source: String
    /// The children, in name order.
    package private(set) var children: [(name: String, feature: RunningFeature)]
    package let outlet = EventOutlet()
    /// The host that made it, kept alive while the composition lives (`BridgedFeature.owner`).
    package var owner: AnyObject?
    private var seq = 0
    private let lock = NSLock()
    private var _state: LuaValue = .nil
    private var subscriptions: [Disposable] = []
    private var hasMapEffect: Bool
    /// The declared `actions` `send` checks on any thread (nil: none declared, `route` decides).
    private let declaredActions: Locked<Schema?>
    private var _effectSource: String?
    /// Tag put on outward effects instead of the child's name (set by an enclosing composition); any thread.
    package var effectSource: String? {
        get { lock.withLock { _effectSource } }
        set { lock.withLock { _effectSource = newValue } }
    }
    /// The child a `mutation` or `state` event being delivered came from (`"from"` in
    /// jsonl, as for effects); nil outside a delivery. Listeners read it while they
    /// are called, on the state executor.
    package private(set) var sourceOfCurrentEvent: String?

    package init(
        definition: FeatureDefinition, bridge: LuaBridge, children: [(String, RunningFeature)], source: String
    ) throws {
        self.definition = definition
        self.bridge = bridge
        self.source = source
        self.children = children.sorted { $0.0 < $1.0 }.map { (name: $0.0, feature: $0.1) }
        hasMapEffect = try bridge.lua.rawGet(definition.table, "mapEffect") { $0.isFunction(1) }
        declaredActions = Locked(definition.declaresActions ? definition.actions : nil)
        _state = try LuaComposite.combine(definition, self.children, bridge: bridge, source: source)
        subscribeChildren()
    }

    private func subscribeChildren() {
        subscriptions.forEach { $0.dispose() }
        subscriptions = children.map { childName, child in
            child.outlet.add { [weak self] event in self?.childEvent(childName, event) }
        }
    }

    /// Swaps in new code: the new definition and children (those kept were
    /// reloaded in place by the host, new ones start from their `initial`).
    /// The parent's state is combined anew; a state event follows when it changed.
    /// - Throws: when the new `combine` fails (nothing changes then).
    package func rebind(definition: FeatureDefinition, children: [(String, RunningFeature)]) throws {
        let sorted = children.sorted { $0.0 < $1.0 }.map { (name: $0.0, feature: $0.1) }
        let combined = try LuaComposite.combine(definition, sorted, bridge: bridge, source: source)
        let mapEffect = try bridge.lua.rawGet(definition.table, "mapEffect") { $0.isFunction(1) }
        self.definition = definition
        self.children = sorted
        hasMapEffect = mapEffect
        declaredActions.withLock { $0 = definition.declaresActions ? definition.actions : nil }
        subscribeChildren()
        let changed = combined != state
        lock.lock(); _state = combined; lock.unlock()
        if changed { outlet.send(.state(combined, seq: seq)) }
    }

    deinit {
        subscriptions.forEach { $0.dispose() }
        outlet.finish()
    }

    /// As `LuaFeature.dispose`: from another thread, the events end after the step running now.
    package func dispose() {
        disposed.withLock { $0 = true }
        for child in children { child.feature.dispose() }
        let finish: @Sendable () -> Void = { [outlet, subscriptions] in
            subscriptions.forEach { $0.dispose() }
            outlet.finish()
        }
        guard !bridge.isOnExecutor else { return finish() }
        bridge.scheduler.schedule(finish)
    }
    private let disposed = Locked(false)

    package var isDisposed: Bool { disposed.withLock { $0 } }

    private var deliveringError: FeatureError?

    package var eventError: FeatureError? { deliveringError ?? deliveringChild?.eventError }

    package var name: String { definition.name }

    package var state: LuaValue {
        lock.lock(); defer { lock.unlock() }
        return _state
    }

    package var isIdle: Bool { queuedRoutes.withLock { $0 } == 0 && children.allSatisfy { $0.feature.isIdle } }
    /// Routes queued from other threads and not yet run (`send`).
    private let queuedRoutes = Locked(0)

    package func start() {
        bridge.performQuietly { outlet.send(.state(state, seq: 0)) }
    }

    package func cancel(actionType: String?) {
        for child in children { child.feature.cancel(actionType: actionType) }
    }

    /// Routes `action` to the children `route` names (none when it returns nil).
    /// - Throws: on the state executor, when `route` names an unknown child or returns
    ///   something else, or a child refuses it. From another thread the route is queued and
    ///   such a refusal is an `.error` event instead; a disposed or stuck feature throws.
    package func send(_ action: LuaValue) throws {
        guard !isDisposed else {
            throw FeatureError(
                stage: .send, action: action,
                message: "feature '\(name)' was disposed; it takes no more actions (load it again)")
        }
        guard !bridge.lua.isStuck else { throw FeatureError.stuck(feature: name, action: action) }
        try check(action)
        // `route` is Lua: it runs on the state executor whichever thread sends. From another
        // thread it is queued there, not waited for (the executor may be waiting for this
        // thread): what `route` or a child then refuses is an `.error` event of stage `.send`.
        guard bridge.isOnExecutor else {
            queuedRoutes.withLock { $0 += 1 }
            bridge.scheduler.schedule { [weak self] in
                guard let self else { return }
                defer { self.queuedRoutes.withLock { $0 -= 1 } }
                guard !self.isDisposed, !self.bridge.lua.isStuck else { return }
                do { try self.route(action) } catch {
                    self.report(FeatureError(refused: error, action: action), stage: .send)
                }
            }
            return
        }
        do { try route(action) } catch { throw FeatureError(refused: error, action: action) }
    }

    /// Checks `action` against the declared `actions`, if any, on any thread.
    /// - Throws: `FeatureError` of stage `.send` naming the declared actions; nothing is routed.
    package func check(_ action: LuaValue) throws {
        do { _ = try declaredActions.withLock { try $0?.validate(action) } } catch {
            throw FeatureError(refused: error, action: action)
        }
    }

    private func route(_ action: LuaValue) throws {
        let type = action["type"]?.stringValue ?? action.description
        let at = definition.locations["route"] ?? source
        // `route` returns pairs: `child, action [, child, action ...]`; nil drops the action.
        let pairs: [(String, LuaValue)] = try bridge.lua.call(
            bridge.dispatch.route, [.ref(definition.table), .value(action), .value(state)]
        ) { slots in
            if slots.isNil(1) && slots.count <= 2 { return [] }
            var pairs: [(String, LuaValue)] = []
            var i = 1
            while i <= slots.count {
                guard let name = try slots.value(i, path: "child name").stringValue else {
                    let which = i == 1 ? "" : " (value \(i))"
                    throw LuaStreamError(
                        message:
                            "\(name).route must return a child name (a string) and the child's action, or several such pairs, or nil to drop the action (got \(slots.typeName(i))\(which))",
                        location: at)
                }
                pairs.append(
                    (
                        name,
                        i + 1 > slots.count || slots.isNil(i + 1)
                            ? action : try slots.value(i + 1, path: "child action")
                    ))
                i += 2
            }
            return pairs
        }
        guard !pairs.isEmpty else {
            outlet.send(.log(message: "\(name): route dropped action '\(type)' (it returned nil)", location: at))
            return
        }
        // Every child is checked before any gets its action: an unknown one sends nothing.
        let targets = try pairs.map { childName, childAction -> (String, RunningFeature, LuaValue) in
            guard let child = children.first(where: { $0.name == childName })?.feature else {
                throw LuaStreamError(
                    message:
                        "\(name): route sends action '\(type)' to unknown child '\(childName)'; children: \(children.map(\.name).joined(separator: ", "))",
                    location: at)
            }
            return (childName, child, childAction)
        }
        for (childName, child, childAction) in targets {
            do { try child.send(childAction) } catch {
                // Name the action that was sent; the child's own action only as where it went.
                let (message, _) = LuaErrorReport.describe(error, fallback: nil)
                let childType = childAction["type"]?.stringValue ?? "?"
                let routed = childType == type ? "child '\(childName)'" : "child '\(childName)' as '\(childType)'"
                throw LuaStreamError(message: "action '\(type)', routed to \(routed): \(message)", location: at)
            }
        }
        outlet.send(.action(action))
    }

    // MARK: - Children's events

    /// The child whose event is being forwarded right now.
    private var deliveringChild: RunningFeature?

    package var eventCause: LuaValue? { deliveringChild?.eventCause }
    /// None: the composition's own action event has no loop number to match its children's.
    package var eventCauseID: String? { nil }

    package var inFlight: [FeatureFlight] {
        children.flatMap { child in
            child.feature.inFlight.map { flight in
                var f = flight
                f.child = f.child.map { "\(child.name).\($0)" } ?? child.name
                return f
            }
        }
    }

    private func childEvent(_ childName: String, _ event: FeatureEvent) {
        deliveringChild = children.first { $0.name == childName }?.feature
        defer { deliveringChild = nil }
        switch event {
        case .action:
            break  // the parent's action was reported when it was routed
        case .mutation(let m, _):
            seq += 1
            sourceOfCurrentEvent = childName
            defer { sourceOfCurrentEvent = nil }
            outlet.send(.mutation(m, seq: seq))
        case .state(_, let childSeq):
            guard childSeq > 0 else { return }
            do {
                let combined = try LuaComposite.combine(definition, children, bridge: bridge, source: source)
                lock.lock(); _state = combined; lock.unlock()
                sourceOfCurrentEvent = childName
                defer { sourceOfCurrentEvent = nil }
                outlet.send(.state(combined, seq: seq))
            } catch {
                report(error, stage: .reduce)
            }
        case .effect(let e, _):
            guard hasMapEffect else {
                outlet.send(.effect(e, from: effectSource ?? childName))
                return
            }
            do {
                let mapped = try bridge.lua.call(
                    bridge.dispatch.mapEffect,
                    [.ref(definition.table), .value(.string(LuaString(childName))), .value(e)]
                ) {
                    try $0.value(1, path: "effect")
                }
                if !mapped.isNil { outlet.send(.effect(mapped, from: effectSource ?? childName)) }
            } catch {
                report(error, stage: .effect)
            }
        case .error, .log, .reload:
            outlet.send(event)
        }
    }

    /// Reports an error that happened outside the loop (a failed reload) as an `.error` event.
    package func report(outside error: any Error, stage: FeatureError.Stage) { report(error, stage: stage) }

    private func report(_ error: any Error, stage: FeatureError.Stage) {
        let (message, location) = LuaErrorReport.describe(error, fallback: source)
        deliveringError = bridge.relative(FeatureError.from(error, stage: stage, action: eventCause, fallback: source))
        defer { deliveringError = nil }
        outlet.send(.error(message: bridge.relative(message), location: location.map(bridge.relative)))
    }

    private static func combine(
        _ definition: FeatureDefinition, _ children: [(name: String, feature: RunningFeature)],
        bridge: LuaBridge, source: String
    ) throws -> LuaValue {
        var states = LuaTable()
        for child in children { states[child.name] = child.feature.state }
        return try bridge.lua.call(bridge.dispatch.combine, [.ref(definition.table), .value(.table(states))]) { slots in
            guard slots.isTable(1) else {
                throw LuaStreamError(
                    message:
                        "\(definition.name).combine must return the parent's state table (got \(slots.typeName(1)))",
                    location: source)
            }
            let combined = try slots.value(1, path: "state")
            // A declared state holds what combine makes too: a misfit is refused (nothing changes).
            if let problem = definition.declaredState?.problem(with: combined, at: "state") {
                throw LuaStreamError(
                    message: "\(definition.name).combine: \(problem), as the compose's `state` declares it",
                    location: definition.locations["combine"] ?? source)
            }
            return combined
        }
    }
}
