import LuaKit

/// Small Lua functions through which Swift calls a definition's functions by
/// name at dispatch time (no closure keeps old code alive across a reload).
package final class LuaDispatch: @unchecked Sendable {
    package let handle: LuaRef
    /// `reduce(def, state, mutation, lazy)`: the definition's reduce on write views of the
    /// state. With `lazy`, writes that may wait stay in Lua (`takePending`).
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
    /// is 1 while handle runs and 2 from the start of reduce on (read after an error).
    package let step: LuaRef
    package let stepStage: LuaRef
    package let setMutationShapes: LuaRef
    /// `takePending()`: the writes of reduces that returned 3 (pending: plain scalars the
    /// declared state takes, kept in Lua) as the list and count `applyStateWrites` reads;
    /// none are pending after (a reload that gives the state another table drops them so).
    package let takePending: LuaRef

    /// `handle` and effect handlers get a read-only view of the state (
    /// outside `reduce` the state is read-only): reading goes through to the state
    /// (nested tables as views too, `#`, `pairs`, `ipairs` and `next` work), a write
    /// fails naming the field. Each call gets views of its own (one small table for the
    /// state, one more per nested table it reads), so a view kept past its call fails in a
    /// later call too. A handler that declares no second parameter (and no `...`), such as
    /// `handle = function(action)`, cannot reach the state and gets no view at all. The reader copies a view as the
    /// table it shows, so `return { type = "set", items = state.items }` works.
    /// (The Lua is `HostChunks.dispatch`, loaded from its bytecode.)
    init(_ lua: LuaState) throws {
        let (getMetatable, setMetatable) = try lua.rawMetatableFunctions()
        let arguments: [LuaPush] = [.ref(getMetatable), .ref(setMetatable), .value(.table(LuaTable(isJSONArray: true))), .ref(try lua.rearmFunction()),
                                    .ref(try lua.flatCheckFunction()), .ref(try lua.paramsFunction()), .ref(try lua.fitsFunction())]
        let refs = try lua.call(try lua.load(HostChunks.dispatch), arguments) { slots in
            try (1...30).map { try slots.ref($0) }
        }
        try lua.registerViews(.readOnly, metatable: refs[0], targets: refs[1])
        try lua.registerViews(.write, metatable: refs[2], targets: refs[3])
        try lua.installWriteViewAccess(metatable: refs[2], targets: refs[3], log: refs[8], stored: refs[9], wrap: refs[10], check: refs[24])
        try lua.installViewClose(metatable: refs[21], count: refs[22])
        try lua.registerViewRefuser(refs[23])
        (undo, installNext, mark, viewTarget, setShape) = (refs[4], refs[5], refs[6], refs[7], refs[25])
        (handle, reduce, effect, request, makeEnv) = (refs[11], refs[12], refs[13], refs[14], refs[15])
        (migrate, route, combine, mapEffect, identity) = (refs[16], refs[17], refs[18], refs[19], refs[20])
        (step, stepStage, setMutationShapes, takePending) = (refs[26], refs[27], refs[28], refs[29])
    }
}
