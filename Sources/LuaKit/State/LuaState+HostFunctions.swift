import CLua
import CLuaShim

extension LuaState {
    /// getmetatable(v) and setmetatable(t, mt) that a metatable's `__metatable` does not
    /// stop, for the host's own Lua code: the shared array marker is kept from scripts so.
    /// Never hand them to a script.
    package func rawMetatableFunctions() throws -> (get: LuaRef, set: LuaRef) {
        enter(); defer { leave() }
        let L = activeL
        guard mf_checkstack(L, 2) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        mf_push_raw_metatable_functions(L)
        let set: LuaRef
        do { set = try popRef(L) } catch { mf_pop(L, 1); throw error }
        return (try popRef(L), set)
    }

    /// `rearm()` (a C function): the call running under `call`'s time limit gets its whole
    /// limit again from now, unless its deadline passed already. For the host's own Lua code
    /// that runs two of a feature's calls in one protected call, so each keeps its own limit.
    /// Never hand it to a script (a script could then run on past its limit).
    package func rearmFunction() throws -> LuaRef { try lightFunctionRef(mf_push_rearm) }

    /// `params(f)` (a C function): the named parameters of the Lua function `f` and whether
    /// it takes `...` (`mf_push_params`).
    package func paramsFunction() throws -> LuaRef { try lightFunctionRef(mf_push_params) }

    /// `fits(shape, k, v)` (a C function): whether a reducer's write of `v` at `k`, in a table
    /// whose view shape is `shape`, may wait in Lua until the state is read (`mf_push_fits`).
    package func fitsFunction() throws -> LuaRef { try lightFunctionRef(mf_push_fits) }

    /// A registry reference to the light C function `push` pushes (one that pushing
    /// cannot make raise: no closure, no allocation).
    func lightFunctionRef(_ push: (OpaquePointer?) -> Void) throws -> LuaRef {
        enter(); defer { leave() }
        let L = activeL
        guard mf_checkstack(L, 1) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        push(L)
        return try popRef(L)
    }

    /// `flat(shapes, m)` (a C function): `FlatShapes.matches` for the host's own Lua code,
    /// `shapes` being a `FlatShapes.luaTable`.
    package func flatCheckFunction() throws -> LuaRef {
        enter(); defer { leave() }
        let L = activeL
        guard mf_checkstack(L, 2) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        try check(mf_push_flat_check(L), L)
        return try popRef(L)
    }
}
