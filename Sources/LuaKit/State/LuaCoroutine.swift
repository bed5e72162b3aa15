import CLua
import CLuaShim

/// A Lua coroutine driven from Swift ([manual §4.6 lua_resume](https://www.lua.org/manual/5.4/manual.html#lua_resume)).
///
///     let co = try lua.coroutine(try lua.load(string: "local x = coroutine.yield(1) return x * 2", name: "co"))
///     try co.resume([]) { try $0.values() }      // (.yielded, [1])
///     try co.resume([21]) { try $0.values() }    // (.finished, [42])
///
/// Yields happen in Lua code (`coroutine.yield`), never inside a Swift frame.
package final class LuaCoroutine {
    package enum Status: Sendable { case yielded, finished }

    /// The state it runs in, nil once that state is gone: like a `LuaRef`, a coroutine
    /// does not keep its state alive (a Swift object the state holds may own the coroutine).
    package var state: LuaState? { owner }
    private weak var owner: LuaState?
    let thread: LuaRef
    let co: OpaquePointer
    private var started = false
    /// True once the body returned, failed or was closed.
    package private(set) var isDead = false

    init(state: LuaState, thread: LuaRef, co: OpaquePointer) {
        self.owner = state
        self.thread = thread
        self.co = co
    }

    /// Resumes with `args`, hands what it yielded or returned to `body`.
    ///
    /// - Throws: the coroutine's error (`LuaError`, with its traceback), after which it is dead.
    package func resume<R>(_ args: [LuaPush], _ body: (LuaSlots) throws -> R) throws -> (Status, R) {
        guard !isDead else {
            throw LuaError.runtime(message: "cannot resume dead coroutine", location: nil, traceback: "")
        }
        guard let state = owner else {
            throw LuaError.runtime(
                message: "cannot resume a coroutine whose Lua state is gone", location: nil, traceback: "")
        }
        state.enter(); defer { state.leave() }
        let L = state.activeL
        let stack = StackGuard(L)
        try state.push(args, on: L)
        guard mf_checkstack(co, Int32(args.count) + 4) != 0 else { throw LuaError.memory(limit: state.memoryLimit) }
        lua_xmove(L, co, Int32(args.count))
        stack.keep()  // the arguments moved to `co`: L is at its old top again
        started = true
        var nres: Int32 = 0
        let saved = state.currentThread
        let status = mf_resume(co, L, Int32(args.count), &nres, state.timeLimitMs ?? 0)
        state.currentThread = saved
        switch status {
        case LUA_OK, LUA_YIELD:
            let results = StackGuard(co, top: mf_gettop(co) - nres)
            let result = try body(LuaSlots(state: state, L: co, base: results.top, count: Int(nres)))
            if status == LUA_OK { isDead = true; return (.finished, result) }
            return (.yielded, result)
        default:
            isDead = true
            throw state.popError(status, co)
        }
    }

    /// Closes the coroutine's pending to-be-closed variables and frees its stack.
    package func close() {
        guard !isDead else { return }
        isDead = true
        guard let state = owner else { return }
        state.enter(); defer { state.leave() }
        _ = mf_close_coroutine(co, state.activeL, state.timeLimitMs ?? 0)
        mf_settop(co, 0)
    }
}

extension LuaState {
    /// Creates a coroutine that will run `function`.
    package func coroutine(_ function: LuaRef) throws -> LuaCoroutine {
        enter(); defer { leave() }
        let L = activeL
        var co: OpaquePointer?
        try check(mf_newthread(L, &co), L)
        let thread = try popRef(L)
        guard let co else { throw LuaError.memory(limit: memoryLimit) }
        mf_rawgeti_registry(co, lua_Integer(function.ref))
        return LuaCoroutine(state: self, thread: thread, co: co)
    }
}
