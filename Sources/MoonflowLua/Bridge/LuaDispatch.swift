import LuaKit

/// Small Lua functions through which Swift calls a definition's functions by
/// name at dispatch time (no closure keeps old code alive across a reload).
///
/// dispatch.lua returns one table of named fields; each is read here once, by name, into the
/// property of the same name (or handed to LuaKit for the views), so a call costs no lookup.
/// Loading fails if the table lacks a name Swift reads or holds one Swift does not, and if
/// its `reduceOutcomes` or `stepStages` differ from `ReduceOutcome` or `StepStage`: adding
/// a field on one side only cannot rewire the others.
package final class LuaDispatch: @unchecked Sendable {
    package let handle: LuaRef
    /// `reduce(def, state, mutation, lazy)`: the definition's reduce on write views of the
    /// state. With `lazy`, writes that may wait stay in Lua (`takePending`). Returns the
    /// state, the effect and a `ReduceOutcome`, then (`inPlace`) the writes and their count.
    package let reduce: LuaRef
    /// Puts back what the last `reduce` wrote (its undo log, newest first): a failed reduce
    /// leaves the state as it was.
    package let undo: LuaRef
    /// `mark(t, kind)`: `mf.array`/`mf.object` (kind "array"/"object") on a table or on a
    /// reducer's view of one.
    package let mark: LuaRef
    /// The table a reducer's view shows (anything else as it is).
    package let viewTarget: LuaRef
    package let effect: LuaRef
    package let request: LuaRef
    package let makeEnv: LuaRef
    package let migrate: LuaRef
    package let route: LuaRef
    package let combine: LuaRef
    package let mapEffect: LuaRef
    /// `react(def, childName, effect, state)`: an `mf.compose`'s `react`, with `true` where it
    /// returned `mf.out`.
    package let react: LuaRef
    /// `mf.out`.
    package let out: LuaRef
    package let identity: LuaRef
    /// Makes the global `next` see through views (feature hosts call it once). rawget,
    /// rawset and rawlen refuse views in every state already (the refuser is registered here).
    package let installNext: LuaRef
    /// `setShape(def, shape, strict, warn)`: the shape of a definition's state, which its
    /// views check a field read as nil or newly written against (`SchemaType.viewShape`):
    /// a field the shape lacks raises (strict) or is passed to `warn(message, level)`.
    package let setShape: LuaRef
    /// `step(def, action, state, env, lazy)`: handle and, when it returned one mutation that
    /// `setMutationShapes(def, shapes)`'s flat check vouches for, reduce, in one call (the
    /// results: the mutation alone, or the mutation, `true` and reduce's). `stepStage[1]`
    /// is a `StepStage`: `handling` while handle runs, `reducing` from the start of reduce on
    /// (read after an error).
    package let step: LuaRef
    package let stepStage: LuaRef
    package let setMutationShapes: LuaRef
    /// `takePending()`: the writes of reduces that returned `pending` (plain scalars the
    /// declared state takes, kept in Lua) as the list and count `applyStateWrites` reads;
    /// none are pending after (a reload that gives the state another table drops them so).
    package let takePending: LuaRef
    /// A feature's time and random numbers (`FeatureInputs`): `start`, `reseed`, `library`.
    package let inputs: LuaRef

    /// `handle` and effect handlers get a read-only view of the state (
    /// outside `reduce` the state is read-only): reading goes through to the state
    /// (nested tables as views too, `#`, `pairs`, `ipairs` and `next` work), a write
    /// fails naming the field. Each call gets views of its own (one small table for the
    /// state, one more per nested table it reads), so a view kept past its call fails in a
    /// later call too. A handler that declares no second parameter (and no `...`), such as
    /// `handle = function(action)`, cannot reach the state and gets no view at all. The reader copies a view as the
    /// table it shows, so `return { type = "set", items = state.items }` works.
    /// (The Lua is `HostChunks.dispatch`, loaded from its bytecode; a test hands another.)
    package init(_ lua: LuaState, chunk: PrecompiledChunk = HostChunks.dispatch) throws {
        let (getMetatable, setMetatable) = try lua.rawMetatableFunctions()
        let arguments: [LuaPush] = [
            .ref(getMetatable), .ref(setMetatable), .value(.table(LuaTable(isJSONArray: true))),
            .ref(try lua.rearmFunction()),
            .ref(try lua.flatCheckFunction()), .ref(try lua.paramsFunction()), .ref(try lua.fitsFunction()),
        ]
        var exports = try lua.call(try lua.load(chunk), arguments) { slots in
            try DispatchExports(slots, at: 1, in: lua, from: "dispatch.lua")
        }
        let writeViews = try exports.take("writeViews"), writeTargets = try exports.take("writeTargets")
        try lua.registerViews(
            .readOnly, metatable: try exports.take("readOnlyViews"), targets: try exports.take("readOnlyTargets"))
        try lua.registerViews(.write, metatable: writeViews, targets: writeTargets)
        try lua.installWriteViewAccess(
            metatable: writeViews, targets: writeTargets, log: try exports.take("writeLog"),
            stored: try exports.take("writeStored"), wrap: try exports.take("writeWrap"),
            check: try exports.take("writeCheck"))
        try lua.installViewClose(metatable: try exports.take("readOnlyClose"), count: try exports.take("readOnlyCount"))
        try lua.registerViewRefuser(try exports.take("refuseRaw"))
        handle = try exports.take("handle")
        reduce = try exports.take("reduce")
        undo = try exports.take("undo")
        mark = try exports.take("mark")
        viewTarget = try exports.take("viewTarget")
        effect = try exports.take("effect")
        request = try exports.take("request")
        makeEnv = try exports.take("makeEnv")
        migrate = try exports.take("migrate")
        route = try exports.take("route")
        combine = try exports.take("combine")
        mapEffect = try exports.take("mapEffect")
        react = try exports.take("react")
        out = try exports.take("out")
        identity = try exports.take("identity")
        installNext = try exports.take("installNext")
        setShape = try exports.take("setShape")
        step = try exports.take("step")
        stepStage = try exports.take("stepStage")
        setMutationShapes = try exports.take("setMutationShapes")
        takePending = try exports.take("takePending")
        inputs = try exports.take("inputs")
        try exports.codes("reduceOutcomes", as: ReduceOutcome.self)
        try exports.codes("stepStages", as: StepStage.self)
        try exports.finish()
    }
}

/// How a reduce's writes reach Swift: the third value dispatch.lua's `reduce` returns, one of
/// its `reduceOutcomes` (the same names and numbers, checked when it loads).
package enum ReduceOutcome: Int, CaseIterable, Sendable {
    /// The state's own table, written in place: the snapshot takes the logged writes.
    case inPlace = 0
    /// A table of the state is now in two places: the state is read whole.
    case twoPlaces = 1
    /// Another table than the state's: read whole (and kept as the state when plain).
    case anotherTable = 2
    /// Every write a plain scalar the declared state takes there: they wait in Lua
    /// (`LuaDispatch.takePending`) and Swift reads nothing now.
    case pending = 3
}

/// Which half of a one-call step is running: `stepStage[1]` in dispatch.lua, one of its
/// `stepStages` (the same names and numbers, checked when it loads).
package enum StepStage: Int, CaseIterable, Sendable {
    /// No step, or one whose handle returned what Swift checks itself (no reduce in the call).
    case outside = 0
    /// The definition's `handle`.
    case handling = 1
    /// The definition's `reduce` (left so after it returns: read only when the call raised).
    case reducing = 2
}

/// The fields of a table a host chunk returns (dispatch.lua's), read by name once at load.
/// `take` hands out each field's reference; `finish` fails if the table holds a field no one
/// took, so the Lua and Swift sides name the same set.
package struct DispatchExports {
    private let lua: LuaState
    private let chunk: String
    private var fields: [String: LuaRef] = [:]

    /// Reads every string-keyed field of the table at `slots[index]` returned by `chunk`.
    package init(_ slots: LuaSlots, at index: Int, in lua: LuaState, from chunk: String) throws {
        self.lua = lua
        self.chunk = chunk
        guard slots.isTable(index) else {
            throw DispatchBoundaryError("\(chunk) must return a table of named fields (got \(slots.typeName(index)))")
        }
        let unnamed = slots.nonStringKeyCount(index)
        guard unnamed == 0 else {
            throw DispatchBoundaryError(
                "\(chunk) returns \(unnamed) value\(unnamed == 1 ? "" : "s") without a name: give each field a name Swift reads"
            )
        }
        var names: [String] = []
        try slots.forEachField(index) { name, _ in names.append(name) }
        for name in names {
            fields[name] = try slots.field(index, name) { try $0.ref(1) }
        }
    }

    /// The field `name`; throws if the table has none.
    package mutating func take(_ name: String) throws -> LuaRef {
        guard let ref = fields.removeValue(forKey: name) else {
            throw DispatchBoundaryError("\(chunk) exports no '\(name)', which Swift reads")
        }
        return ref
    }

    /// Checks that the table at `name` maps exactly the case names of `Codes` to their raw values.
    package mutating func codes<Codes: CaseIterable & RawRepresentable>(_ name: String, as _: Codes.Type) throws
    where Codes.RawValue == Int {
        let ref = try take(name)
        let swift = Dictionary(uniqueKeysWithValues: Codes.allCases.map { (String(describing: $0), $0.rawValue) })
        var lua: [String: Int] = [:]
        if case .table(let table) = try self.lua.value(of: ref, path: name) {
            for (key, value) in table.hash {
                guard let k = key.stringValue, case .integer(let v) = value else { continue }
                lua[k] = Int(v)
            }
        }
        guard lua == swift else {
            func text(_ codes: [String: Int]) -> String {
                codes.sorted { $0.value < $1.value }.map { "\($0.key) = \($0.value)" }.joined(separator: ", ")
            }
            throw DispatchBoundaryError(
                "\(chunk)'s \(name) { \(text(lua)) } are not Swift's \(Codes.self) { \(text(swift)) }: give both the same names and numbers"
            )
        }
    }

    /// Throws if the table holds a field no `take` asked for.
    package func finish() throws {
        guard fields.isEmpty else {
            throw DispatchBoundaryError(
                "\(chunk) exports \(fields.keys.sorted().map { "'\($0)'" }.joined(separator: ", ")), which Swift does not read: read each by name in LuaDispatch, or remove it"
            )
        }
    }
}

/// The Lua half and the Swift half of the dispatch name different fields or codes.
package struct DispatchBoundaryError: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
