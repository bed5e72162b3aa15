import CLuaShim

/// Puts a Lua stack's top back where it was when the guard was made, at the end of the scope
/// that holds it, thrown or not: `let top = mf_gettop(L); defer { mf_settop(L, top) }` said
/// once (mlua's `StackGuard`). `keep()` ends it without restoring, for a helper whose results
/// stay on the stack when it succeeds.
///
///     let stack = StackGuard(L)
///     try check(mf_rawgetfield(L, -1, "x"), L)   // pushes 1
///     return try read(L, -1)                      // the top is back at `stack.top` after this
///
/// Non-copyable, so one guard restores once, when its scope ends (or never, after `keep()`).
/// A scope that never reads the guard touches it once (`_ = stack`, which borrows it): Swift
/// warns about a binding never used, and `_ = StackGuard(L)` would restore at once.
struct StackGuard: ~Copyable {
    let L: OpaquePointer
    /// The top the guard restores.
    let top: Int32

    /// Guards the current top of `L`.
    init(_ L: OpaquePointer) {
        self.L = L
        top = mf_gettop(L)
    }

    /// Guards a top the caller computed (below values it wants gone at the end, say).
    init(_ L: OpaquePointer, top: Int32) {
        self.L = L
        self.top = top
    }

    /// Ends the guard and leaves the stack as it is now.
    consuming func keep() { discard self }

    deinit { mf_settop(L, top) }
}
