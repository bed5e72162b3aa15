import LuaKit
import Runtime
import Streams

// The Interactor loop's hooks into the definition: handle, reduce, the one-call step and
// effect handlers, each one protected Lua call, and the kept table of a mutation `handle`
// returned that stays in Lua until reduce takes it.
extension LuaFeature {
    /// `file:line` of the definition's function at `key` (`handle`, `effects.fetch`), else the file.
    func location(_ key: String) -> String { definition.locations[key] ?? source }

    /// Checks a mutation where it was produced, so an undeclared one names that function.
    func validated(_ mutation: LuaValue, from key: String) throws -> LuaValue {
        do { try definition.mutations.validate(mutation) } catch let e as SchemaError {
            throw LuaStreamError(message: e.message, location: location(key))
        }
        return mutation
    }

    /// A handler's or effect handler's result: nothing, a mutation, or a stream of checked mutations.
    /// A mutation table the in-place check vouches for stays in Lua (`keep`); any other
    /// is copied out and validated in full.
    func mutations(
        from key: String, _ slots: LuaSlots, what: String,
        keep: ((LuaSlots) -> FeatureMutation?)? = nil
    ) throws -> Handled<FeatureMutation> {
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
        throw LuaStreamError(
            message: "\(what) must return nothing, a mutation table or a stream (got \(slots.typeName(1)))",
            location: location(key))
    }

    /// Keeps the table at slot 1 in `keptTable` when the in-place check vouches for it.
    func keep(_ slots: LuaSlots) -> FeatureMutation? {
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

    func handle(_ action: FeatureAction) -> Handled<FeatureMutation> {
        if binding.reportsActionsInHandle { report(action) }
        releaseKeptSlot()
        handling = (action, interactor.actionIDAtWork)
        defer { handling = nil }
        do {
            return try bridge.lua.call(
                dispatch.handle, [.ref(definition.table), action.pushed, .ref(stateTable), .ref(env)]
            ) { slots in
                try mutations(from: "handle", slots, what: "\(definition.name).handle", keep: keep)
            }
        } catch {
            return .stream(.fail(LocatedError(error, at: location("handle"))))
        }
    }

    /// An action event: a table action is read into a value only when someone listens.
    func report(_ action: FeatureAction) {
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
                throw LuaStreamError(
                    message: "internal: a kept mutation was lost before reduce", location: location("handle"))
            }
            pendingKept = nil
            return (
                .ref(keptTable), outlet.wants(.mutation) ? try bridge.lua.value(of: keptTable, path: "mutation") : nil
            )
        }
    }

    func reduce(_ mutation: FeatureMutation) throws -> LuaValue? {
        // Before the call: a failure here must not undo the last reduce's writes.
        let (pushed, value): (LuaPush, LuaValue?)
        do { (pushed, value) = try pushing(mutation) } catch { throw LocatedError(error, at: location("reduce")) }
        do {
            let (changes, effect) = try bridge.lua.call(
                dispatch.reduce, [.ref(definition.table), .ref(stateTable), pushed, lazy]
            ) { slots in
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
    var lazy: LuaPush { .value(.boolean(!outlet.wants(.state))) }

    private enum StepOutcome {
        case handled(Handled<FeatureMutation>)
        case reduced(changes: [StateChange]?, effect: LuaValue?, mutation: LuaValue?)
    }

    /// `handle` and `reduce` in one protected call (dispatch.lua's `step`) when `handle`
    /// returns one mutation the flat check vouches for; anything else (nothing, a stream,
    /// a mutation to check in full) goes on as a `handle` call's result. Errors keep their
    /// stage: one raised in reduce (or in reading what it returned) rolls the state back.
    func step(_ action: FeatureAction) -> Stepped<FeatureMutation, LuaValue> {
        if binding.reportsActionsInHandle { report(action) }
        releaseKeptSlot()
        var readingReduce = false
        handling = (action, interactor.actionIDAtWork)
        defer { handling = nil }
        stepping = true
        let outcome: StepOutcome
        do {
            defer { stepping = false }
            outcome = try bridge.lua.call(
                dispatch.step, [.ref(definition.table), action.pushed, .ref(stateTable), .ref(env), lazy]
            ) { slots in
                guard slots.count > 1 else {
                    return .handled(try mutations(from: "handle", slots, what: "\(definition.name).handle", keep: keep))
                }
                readingReduce = true
                let mutation = outlet.wants(.mutation) ? try slots.value(1, path: "mutation") : nil
                let (changes, effect) = try reduced(slots.dropping(2))
                return .reduced(changes: changes, effect: effect, mutation: mutation)
            }
        } catch {
            if readingReduce
                || bridge.lua.exchangeCounter(dispatch.stepStage, at: 1, with: StepStage.outside.rawValue)
                    == StepStage.reducing.rawValue
            {
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

    func effect(_ effect: LuaValue) -> Producer<FeatureMutation>? {
        guard let type = effect["type"]?.stringValue, definition.effectHandlers.contains(type) else { return nil }
        let key = "effects.\(type)"
        // Seen before its handler runs: the calls and mutations it makes come after it.
        outlet.send(.effect, .internalEffect(effect, from: nil))
        do {
            let handled = try bridge.lua.call(
                dispatch.effect,
                [.ref(definition.table), .value(.string(LuaString(type))), .value(effect), .ref(stateTable), .ref(env)]
            ) { slots in
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
}
