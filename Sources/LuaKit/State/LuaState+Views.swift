import CLua
import CLuaShim

extension LuaState {
    /// What a kind of view stands for, when the reader copies one out.
    package enum ViewKind: Sendable { case readOnly, write }

    /// Makes tables whose metatable is `metatable` views: reading one copies the
    /// table `targets[view]` shows (a weak-keyed table from view to table).
    package func registerViews(_ kind: ViewKind, metatable: LuaRef, targets: LuaRef) throws {
        enter(); defer { leave() }
        let L = activeL
        guard mf_checkstack(L, 2) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        mf_rawgeti_registry(L, lua_Integer(metatable.ref))
        mf_rawgeti_registry(L, lua_Integer(targets.ref))
        let registered = kind == .readOnly ? mf_register_readonly(L) : mf_register_write_views(L)
        guard registered != 0 else { mf_pop(L, 2); throw LuaError.memory(limit: memoryLimit) }
    }

    /// Registers `refuse(name, view, key)`, which rawget, rawset and rawlen call on a view
    /// of either kind (`registerViews`) instead of acting on it: it raises, naming the field.
    /// The state's raw functions are C ones that check every table they get, so a copy of
    /// them taken before any view existed (the sandbox's) refuses views too.
    package func registerViewRefuser(_ refuse: LuaRef) throws {
        try register(refuse) { mf_register_view_refuser($0) }
    }

    /// Registers `callout`, a function Lua calls (with no arguments, its errors dropped)
    /// before it next calls out into code that may block, once `wantCallout()` asked for it:
    /// a Swift function, os.execute, the io library's functions and file methods.
    package func registerCallout(_ callout: LuaRef) throws {
        try register(callout) { mf_register_callout($0) }
    }

    /// Asks for the registered callout before Lua next calls out into code that may block.
    /// On the thread using the state.
    package func wantCallout() { mf_want_callout(activeL) }

    /// Pushes the function `ref` holds and hands it to a C registrar, which takes it off the stack.
    private func register(_ ref: LuaRef, with registrar: (OpaquePointer) -> Int32) throws {
        enter(); defer { leave() }
        let L = activeL
        guard mf_checkstack(L, 1) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        mf_rawgeti_registry(L, lua_Integer(ref.ref))
        _ = registrar(L)
    }

    /// Makes the write views' reads and writes C functions (`mf_install_write_view_access`):
    /// `metatable.__index` reads raw through `targets[view]` (a table value through
    /// `wrap(table, view, key)`), `metatable.__newindex` writes raw and appends
    /// (view, key, old) to `log` and, for a table, (table, view, key) to `stored`, each
    /// list counting its entries at [0].
    /// A string key read as nil, or written where there is nothing yet, is first shown to
    /// `check(view, key, writing)` (strict access to a declared state).
    package func installWriteViewAccess(
        metatable: LuaRef, targets: LuaRef, log: LuaRef, stored: LuaRef, wrap: LuaRef, check checker: LuaRef
    ) throws {
        enter(); defer { leave() }
        let L = activeL
        guard mf_checkstack(L, 9) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        for ref in [metatable, targets, log, stored, wrap, checker] { mf_rawgeti_registry(L, lua_Integer(ref.ref)) }
        try check(mf_install_write_view_access(L), L)
    }

    /// Gives `metatable` the `__close` that counts `count[1]` down (read-only views'
    /// validity, see `LuaDispatch`): a C closer the time limit's stop lets run.
    package func installViewClose(metatable: LuaRef, count: LuaRef) throws {
        enter(); defer { leave() }
        let L = activeL
        guard mf_checkstack(L, 4) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        for ref in [metatable, count] { mf_rawgeti_registry(L, lua_Integer(ref.ref)) }
        try check(mf_install_view_close(L), L)
    }
}
