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
/// - `react(childName, effect, state)` may turn a child's effect into actions for children
///   and say whether it goes out (`mf.out`), as pairs in order; they run once the child's
///   step is over and `route` has sent all it returned (`Reaction`).
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
    private var hasReact: Bool
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
        hasReact = try bridge.lua.rawGet(definition.table, "react") { $0.isFunction(1) }
        declaredActions = Locked(definition.declaresActions ? definition.actions : nil)
        _state = try LuaComposite.combine(definition, self.children, bridge: bridge, source: source)
        subscribeChildren()
    }

    private func subscribeChildren() {
        subscriptions.forEach { $0.dispose() }
        subscriptions = children.map { childName, child in
            child.outlet.add { [weak self] event in self?.childEvent(childName, event) }
        }
        // Reactions wait for the end of a child's step: its drain running out of work.
        for child in children {
            let id = ObjectIdentifier(child.feature)
            let settled: () -> Void = { [weak self] in self?.childSettled(id) }
            if let feature = child.feature as? LuaFeature {
                feature.afterSettled = settled
            } else if let composite = child.feature as? LuaComposite {
                composite.afterSettled = settled
            }
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
        let react = try bridge.lua.rawGet(definition.table, "react") { $0.isFunction(1) }
        self.definition = definition
        self.children = sorted
        hasMapEffect = mapEffect
        hasReact = react
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
                do { try self.routeAndReact(action) } catch {
                    self.report(FeatureError(refused: error, action: action), stage: .send)
                }
            }
            return
        }
        do { try routeAndReact(action) } catch { throw FeatureError(refused: error, action: action) }
    }

    /// Routes `action`, then runs the reactions its children's steps left waiting (even when a
    /// child refused it: what the others did stands).
    private func routeAndReact(_ action: LuaValue) throws {
        reactionsInARow = 0
        defer {
            runReactions()
            if isQuiet { afterSettled?() }
        }
        let wasBusy = busy
        busy = true
        defer { busy = wasBusy }
        try route(action)
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

    /// A child's event: the child's action behind it; a reaction's: the action behind the effect.
    package var eventCause: LuaValue? {
        if let child = deliveringChild { return child.eventCause }
        return deliveringReaction?.cause
    }
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

    /// Each child's live ids, as `child: id` (ids are per feature: a child's are its own).
    package var liveCancellableIDs: [String] {
        children.flatMap { child in child.feature.liveCancellableIDs.map { "\(child.name): \($0)" } }
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
            if hasReact, let reaction = react(to: e, from: childName) {
                waiting.append(reaction)
            } else if !waiting.isEmpty {
                // Behind the reactions waiting: effects go out in the order they came.
                waiting.append(Reaction(from: childName, effect: e, cause: eventCause, steps: [.out(e)]))
            } else {
                passOut(e, from: childName)
            }
        case .internalEffect(let e, _):
            outlet.send(.internalEffect(e, from: childName))
        case .reaction, .cancelled, .error, .log, .reload, .call, .invariant:
            outlet.send(event)
        }
    }

    /// Sends `effect` of child `childName` out, through `mapEffect` when there is one.
    private func passOut(_ effect: LuaValue, from childName: String) {
        guard hasMapEffect else {
            outlet.send(.effect(effect, from: effectSource ?? childName))
            return
        }
        do {
            let mapped = try bridge.lua.call(
                bridge.dispatch.mapEffect,
                [.ref(definition.table), .value(.string(LuaString(childName))), .value(effect)]
            ) {
                try $0.value(1, path: "effect")
            }
            if !mapped.isNil { outlet.send(.effect(mapped, from: effectSource ?? childName)) }
        } catch {
            report(error, stage: .effect)
        }
    }

    // MARK: - Reactions (`react`)

    /// What `react` returned for one child effect, checked, waiting for the child's step to end.
    private struct Reaction {
        enum Step {
            /// The action to the child `to` (the child's `actions` took it when checked).
            case send(LuaValue, to: String, child: RunningFeature)
            /// The effect (or the one `react` gave instead) goes out.
            case out(LuaValue)
        }
        /// The child whose effect it is, the effect, and the action behind it.
        let from: String
        let effect: LuaValue
        let cause: LuaValue?
        let steps: [Step]
    }

    /// How many reaction actions may follow each other without an action from outside.
    static let reactionLimit = 1000
    private var waiting: [Reaction] = []
    /// The reaction being run and the index of its next step.
    private var runningReaction: (reaction: Reaction, next: Int)?
    /// The child whose step the running reaction waits for: the child that was sent its action
    /// (its drain may run later, on a state executor that schedules drains).
    private var awaitedChild: ObjectIdentifier?
    private var reactionsInARow = 0
    /// Routing or running reactions: a child's step that ends meanwhile leaves its reactions
    /// for that to run.
    private var busy = false
    /// The reaction whose action or effect is being delivered (`eventCause`: the effect's action).
    private var deliveringReaction: Reaction?
    /// Called once this composition's work at hand is over (set by an enclosing composition,
    /// whose reactions wait for it); on the state executor.
    package var afterSettled: (() -> Void)?
    /// No reaction runs or waits.
    private var isQuiet: Bool { runningReaction == nil && waiting.isEmpty && awaitedChild == nil }

    /// A child's drain ran out of work: the reaction that waited for its step goes on, and the
    /// reactions its effects left run, unless the composition is routing or reacting already
    /// (then they run when that is over).
    private func childSettled(_ child: ObjectIdentifier) {
        if awaitedChild == child { awaitedChild = nil }
        guard !busy else { return }
        runReactions()
        if isQuiet { afterSettled?() }
    }

    /// Calls `react` for a child's effect and checks what it returns: nil when it returns
    /// nothing (the effect goes on as without `react`) or when that is refused (an `.error`
    /// event says why, and nothing of it happens: the effect does not go out either).
    private func react(to effect: LuaValue, from childName: String) -> Reaction? {
        let at = definition.locations["react"] ?? source
        let what = "\(name).react: effect '\(effect["type"]?.stringValue ?? "?")' from child '\(childName)'"
        func refuse(_ message: String) -> LuaStreamError {
            LuaStreamError(message: "\(what) \(message)", location: at)
        }
        do {
            // Pairs of `target, value`: a child's name and its action, or `true` (mf.out) and the
            // effect to send out (nil: this one).
            let pairs: [(LuaValue, LuaValue)] = try bridge.lua.call(
                bridge.dispatch.react,
                [.ref(definition.table), .value(.string(LuaString(childName))), .value(effect), .value(state)]
            ) { slots in
                if slots.count == 0 || (slots.isNil(1) && slots.count <= 2) { return [] }
                var pairs: [(LuaValue, LuaValue)] = []
                var i = 1
                while i <= slots.count {
                    let target = try slots.value(i, path: "react target")
                    let value = i + 1 > slots.count ? LuaValue.nil : try slots.value(i + 1, path: "react value")
                    pairs.append((target, value))
                    i += 2
                }
                return pairs
            }
            guard !pairs.isEmpty else { return nil }
            var steps: [Reaction.Step] = []
            for (target, value) in pairs {
                if case .boolean(true) = target {
                    steps.append(.out(value.isNil ? effect : value))
                    continue
                }
                guard let childTo = target.stringValue else {
                    throw refuse(
                        "returned \(target.typeName) where a child's name or mf.out goes; return pairs: \"cart\", { type = \"clear\" }, and mf.out to pass the effect out"
                    )
                }
                guard let child = children.first(where: { $0.name == childTo })?.feature else {
                    throw refuse(
                        "sends an action to unknown child '\(childTo)'; children: \(children.map(\.name).joined(separator: ", "))"
                    )
                }
                guard case .table = value else {
                    throw refuse(
                        "gives child '\(childTo)' \(value.typeName) where its action goes, e.g. \"\(childTo)\", { type = \"...\" }"
                    )
                }
                do {
                    if let feature = child as? LuaFeature {
                        try feature.check(value)
                    } else if let composite = child as? LuaComposite {
                        try composite.check(value)
                    }
                } catch {
                    let (message, _) = LuaErrorReport.describe(error, fallback: nil)
                    throw refuse(
                        "sends child '\(childTo)' action '\(value["type"]?.stringValue ?? "?")', which it refuses: \(message); change what react returns or what '\(childTo)' declares"
                    )
                }
                steps.append(.send(value, to: childTo, child: child))
            }
            return Reaction(from: childName, effect: effect, cause: eventCause, steps: steps)
        } catch {
            report(error, stage: .effect)
            // Refused: nothing of it happens. Waiting for nothing, so it is not passed out either.
            return Reaction(from: childName, effect: effect, cause: eventCause, steps: [])
        }
    }

    /// Runs the reactions waiting, in order, and those their actions' effects add, until none
    /// is left (or `reactionLimit` actions in a row, a cycle: an error says so). After each
    /// action it waits for that child's step to end (`awaitedChild`), so the pairs after it, an
    /// `mf.out` say, come after what the action did on every state executor.
    private func runReactions() {
        guard !busy, awaitedChild == nil else { return }
        busy = true
        defer { busy = false }
        while true {
            if runningReaction == nil {
                guard !waiting.isEmpty else { break }
                runningReaction = (waiting.removeFirst(), 0)
            }
            guard let (reaction, i) = runningReaction, i < reaction.steps.count else {
                runningReaction = nil
                continue
            }
            runningReaction = (reaction, i + 1)
            deliveringReaction = reaction
            defer { deliveringReaction = nil }
            switch reaction.steps[i] {
            case .out(let effect):
                passOut(effect, from: reaction.from)
            case .send(let action, let to, let child):
                reactionsInARow += 1
                let about =
                    "action '\(action["type"]?.stringValue ?? "?")' to child '\(to)' (reacting to effect '\(reaction.effect["type"]?.stringValue ?? "?")' from child '\(reaction.from)')"
                guard reactionsInARow <= Self.reactionLimit else {
                    runningReaction = nil
                    waiting.removeAll()
                    reactionsInARow = 0
                    report(
                        LuaStreamError(
                            message:
                                "\(name).react sent \(Self.reactionLimit) actions in a row without an action from outside, the last \(about): children whose effects react on each other in a cycle; the rest were dropped",
                            location: definition.locations["react"] ?? source),
                        stage: .effect)
                    return
                }
                outlet.send(.reaction(action, to: to, from: reaction.from, effect: reaction.effect))
                awaitedChild = ObjectIdentifier(child)
                do { try child.send(action) } catch {
                    awaitedChild = nil
                    let (message, _) = LuaErrorReport.describe(error, fallback: nil)
                    report(
                        LuaStreamError(
                            message: "\(name).react: \(about): \(message)",
                            location: definition.locations["react"] ?? source),
                        stage: .effect)
                }
                // Its step runs later (a drain the executor schedules): go on when it ends.
                if awaitedChild != nil, !child.isDisposed { return }
                awaitedChild = nil
            }
        }
        reactionsInARow = 0
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
