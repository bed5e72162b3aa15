import CLua
import CLuaShim

extension LuaState {
    // MARK: - Calling ([manual §4.6 lua_pcall](https://www.lua.org/manual/5.4/manual.html#lua_pcall))

    /// Calls `function` with `args` under protection and the time budget and
    /// returns its results copied into Swift.
    ///
    /// - Throws: `LuaError.runtime` (message, `file:line`, traceback),
    ///   `.timeout`, `.memory`, or `.conversion` if a result cannot be copied.
    @discardableResult
    public func call(_ function: LuaRef, _ args: [LuaPush] = []) throws -> [LuaValue] {
        try call(function, args) { try $0.values() }
    }

    /// Calls `function` and hands its results to `body` while they are still on
    /// the stack (to take refs to functions or userdata among them).
    @inlinable
    public func call<R>(_ function: LuaRef, _ args: [LuaPush], _ body: (LuaSlots) throws -> R) throws -> R {
        // Generic only here, inlined into the caller: the call itself is not generic, so
        // no type metadata is looked up per call.
        var result: R?
        try call(function, args, reading: { result = try body($0) })
        return result.take()!  // moved out, not copied and then released
    }

    /// Calls `function` and hands its results to `body` while they are on the stack.
    public func call(_ function: LuaRef, _ args: [LuaPush], reading body: (LuaSlots) throws -> Void) throws {
        try call(function, args, limitMs: timeLimitMs ?? 0, reading: body)
    }

    /// Calls `function` without arming the time budget: calls that reach Lua
    /// again from inside it (through Swift functions) each get the whole budget.
    /// For a driver that runs long on purpose, such as the spec runner running
    /// every test of a file while each handler and reducer stays bounded.
    package func callWithoutTimeLimit(
        _ function: LuaRef, _ args: [LuaPush], reading body: (LuaSlots) throws -> Void
    ) throws {
        try call(function, args, limitMs: 0, reading: body)
    }

    private func call(
        _ function: LuaRef, _ args: [LuaPush], limitMs: Int64, reading body: (LuaSlots) throws -> Void
    ) throws {
        enter(); defer { leave() }
        let L = activeL
        // The results stay on the stack while `body` reads them; the guard drops them after.
        let stack = StackGuard(L)
        guard mf_checkstack(L, Int32(args.count) + 8) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        mf_rawgeti_registry(L, lua_Integer(function.ref))
        try push(args, on: L)
        let status = mf_pcall(L, Int32(args.count), LUA_MULTRET, limitMs)
        try check(status, L)
        try body(LuaSlots(state: self, L: L, base: stack.top, count: Int(mf_gettop(L) - stack.top)))
    }

    /// Loads and runs a string; returns its results.
    @discardableResult
    public func run(string source: String, name: String) throws -> [LuaValue] {
        try call(try load(string: source, name: name))
    }

    /// Loads and runs a file with `args` as its `...`.
    @discardableResult
    public func run(file path: String, args: [LuaValue] = []) throws -> [LuaValue] {
        try call(try load(file: path), args.map { .value($0) })
    }
}
