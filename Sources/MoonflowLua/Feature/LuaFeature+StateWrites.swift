import Foundation
import LuaKit
import Synchronization

// What a reduce wrote, brought into the snapshot: read at once (the logged writes, or the
// state whole), or left pending in Lua and taken when the drain ends or the state is read;
// a failed reduce rolled back; the state events that follow.
extension LuaFeature {
    /// Reads what dispatch.lua's `reduce` returned (the state, the effect, how the state
    /// changed and the writes), brings the snapshot up to date (the writes still pending
    /// first: Lua lists them in front) and checks the declared state and outputs, or, when
    /// the writes wait in Lua (`ReduceOutcome.pending`), only notes that they do. Throws (the caller rolls back)
    /// when something does not fit.
    func reduced(_ slots: LuaSlots) throws -> (changes: [StateChange]?, effect: LuaValue?) {
        guard slots.isTable(1) else {
            throw LuaStreamError(
                message:
                    "\(definition.name).reduce must return the state table (got \(slots.typeName(1))); end it with `return state`",
                location: location("reduce"))
        }
        var effect: LuaValue? = nil
        if slots.count >= 2 && !slots.isNil(2) {
            effect = try checkedEffects(try slots.value(2, path: "effect"))
        }
        let code = try slots.integer(3)
        guard let outcome = ReduceOutcome(rawValue: Int(code)) else {
            throw LuaStreamError(
                message:
                    "internal: dispatch.lua's reduce returned the outcome \(code), which ReduceOutcome does not name",
                location: location("reduce"))
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
        if let problem = binding.definition.declaredState?.problem(with: whole, at: "state") {
            throw StateTypeError(problem: problem)
        }
        stateTable = outcome == .anotherTable && plain ? try slots.ref(1) : try bridge.lua.ref(.value(whole))
        snapshot = whole
        hasPending = false
        owesWholeRead = false
        return ([StateChange(path: [], old: previous, new: whole)], effect)
    }

    /// The events of a reduce that held: the mutation (when asked for) and the state.
    func deliver(_ changes: [StateChange]?, mutation value: LuaValue?) {
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
    var hasPending: Bool {
        get { pendingThread.load(ordering: .acquiring) != 0 }
        set { pendingThread.store(newValue ? LuaFeature.currentThread : 0, ordering: .releasing) }
    }
    static var currentThread: UInt {
        #if canImport(Darwin)
        unsafeBitCast(pthread_self(), to: UInt.self)  // a pointer there
        #else
        pthread_self()
        #endif
    }

    /// Brings the snapshot up to date with the writes waiting in Lua (on the state executor).
    /// - Returns: the changes, in the order written (one at the empty path when the state
    ///   was read whole), or nil when nothing waited.
    @discardableResult
    func takePending() -> [StateChange]? {
        // `hasPending` stays set until the snapshot holds the writes: a reader on another
        // thread that finds it clear returns the snapshot at once, so clearing it first let
        // a read right after a reduce's effect see the state from before that reduce.
        guard hasPending else { return nil }
        var changes: [StateChange]?
        var reducing = false
        do {
            try bridge.lua.call(dispatch.takePending, []) { slots in
                reducing = (try? slots.value(3)) == .boolean(true)
                guard !owesWholeRead else { return }
                let count = Int(try slots.integer(2))
                changes = try snapshotStore.withLock { snapshot in
                    try slots.applyStateWrites(1, count: count, root: "state", to: &snapshot)
                }
            }
        } catch {}
        if let changes {
            hasPending = false
            return changes
        }
        // Read whole, once no reduce is running (the tables hold its writes so far).
        owesWholeRead = true
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
    func rollBack() {
        do { try bridge.lua.call(dispatch.undo, []) { _ in () } } catch {
            try? bridge.lua.replace(stateTable, with: snapshot)
        }
    }

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
}

/// A reduce that left the state outside its declared `state`: the state is rolled back.
struct StateTypeError: Error, CustomStringConvertible {
    let problem: String
    var description: String { "\(problem), as the feature's `state` declares it; the state is rolled back" }
}
