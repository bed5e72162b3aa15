import CLua
import CLuaShim

extension LuaState {
    /// Copies `value` into Lua and returns a reference to it.
    public func ref(_ value: LuaPush) throws -> LuaRef {
        enter(); defer { leave() }
        let L = activeL
        try push([value], on: L)
        return try popRef(L)
    }

    /// Reads the value a reference holds, copied into Swift.
    public func value(of ref: LuaRef, path: String = "value") throws -> LuaValue {
        enter(); defer { leave() }
        let L = activeL
        mf_rawgeti_registry(L, lua_Integer(ref.ref))
        defer { mf_pop(L, 1) }
        return try read(L, -1, path: path)
    }

    /// Pops the top value into a registry reference.
    func popRef(_ L: OpaquePointer) throws -> LuaRef {
        let type = mf_type(L, -1)
        var r: Int32 = 0
        try check(mf_ref(L, &r), L)
        return LuaRef(ref: r, type: type, state: self)
    }

    /// Creates a table with `fields` (values may be functions or refs) and returns a reference to it.
    ///
    ///     let env = try lua.makeTable(["services": .ref(services), "log": .function { _ in [] }])
    public func makeTable(_ fields: [(String, LuaPush)]) throws -> LuaRef {
        enter(); defer { leave() }
        let L = activeL
        let stack = StackGuard(L)  // back at its top on success too: popRef takes the table
        try push(.table(LuaTable()), on: L)
        for (key, value) in fields {
            try push([.value(.string(LuaString(key))), value], on: L)
            try check(mf_rawset(L, stack.top + 1), L)
        }
        return try popRef(L)
    }

    /// `table[key] = value` without metamethods.
    package func rawSet(_ table: LuaRef, _ key: LuaValue, _ value: LuaPush) throws {
        enter(); defer { leave() }
        let L = activeL
        let stack = StackGuard(L)
        mf_rawgeti_registry(L, lua_Integer(table.ref))
        try push([.value(key), value], on: L)
        try check(mf_rawset(L, stack.top + 1), L)
    }

    /// `table[key]` without metamethods, handed to `body` on the stack (slot 1).
    package func rawGet<R>(_ table: LuaRef, _ key: String, _ body: (LuaSlots) throws -> R) throws -> R {
        enter(); defer { leave() }
        let L = activeL
        let stack = StackGuard(L)
        mf_rawgeti_registry(L, lua_Integer(table.ref))
        try check(mf_rawgetfield(L, stack.top + 1, key), L)
        return try body(LuaSlots(state: self, L: L, base: stack.top + 1, count: 1))
    }

    /// The integer at `table[index]` (0 when it holds none), and `table[index] = newValue`
    /// when one is given: raw, for a small table of counters shared with Lua code (the
    /// slot exists already, so nothing allocates and nothing raises).
    package func exchangeCounter(_ table: LuaRef, at index: Int, with newValue: Int? = nil) -> Int {
        enter(); defer { leave() }
        let L = activeL
        guard mf_checkstack(L, 2) != 0 else { return 0 }
        mf_rawgeti_registry(L, lua_Integer(table.ref))
        mf_rawgeti(L, -1, lua_Integer(index))
        let old = Int(lua_tointegerx(L, -1, nil))
        mf_pop(L, 1)
        if let newValue {
            lua_pushinteger(L, lua_Integer(newValue))
            lua_rawseti(L, -2, lua_Integer(index))
        }
        mf_pop(L, 1)
        return old
    }

    /// Replaces the value a reference holds (the registry slot now holds `value`).
    package func replace(_ ref: LuaRef, with value: LuaValue) throws {
        enter(); defer { leave() }
        let L = activeL
        try push(value, on: L)
        mf_pushvalue(L, -1)
        lua_rawseti(L, mf_registryindex(), lua_Integer(ref.ref))  // the slot exists: no allocation
        mf_pop(L, 1)
    }
}
