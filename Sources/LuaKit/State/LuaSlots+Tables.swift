import CLua
import CLuaShim

extension LuaSlots {
    /// Puts the value at `i` into the registry slot `ref` holds (the slot exists: nothing
    /// allocates, nothing raises). Returns false when there is no value at `i`.
    package func store(_ i: Int, into ref: LuaRef) -> Bool {
        guard i >= 1 && i <= count, mf_checkstack(L, 1) != 0 else { return false }
        mf_pushvalue(L, base + Int32(i))
        lua_rawseti(L, mf_registryindex(), lua_Integer(ref.ref))
        return true
    }

    /// `slots[i][key] = value` without metamethods (the value at `i` must be a table).
    package func rawSet(_ i: Int, _ key: String, _ value: LuaValue) throws {
        let stack = StackGuard(L)
        _ = stack
        try state.push([.value(.string(LuaString(key))), .value(value)], on: L)
        let status = mf_rawset(L, base + Int32(i))
        if status != LUA_OK { throw state.popError(status, L) }
    }

    /// `slots[i][key]` read raw (nil if the value at `i` is not a table), handed to `body` as slot 1.
    package func field<R>(_ i: Int, _ key: String, _ body: (LuaSlots) throws -> R) throws -> R {
        let stack = StackGuard(L)
        if mf_type(L, base + Int32(i)) != LUA_TTABLE {
            lua_pushnil(L)
        } else {
            let status = mf_rawgetfield(L, base + Int32(i), key)
            if status != LUA_OK { throw state.popError(status, L) }
        }
        return try body(LuaSlots(state: state, L: L, base: stack.top, count: 1))
    }
}

extension LuaSlots {
    /// How many keys of the table at `i` are not strings (raw, no metamethods; 0 for a value
    /// that is not a table): a table of named fields holds none.
    package func nonStringKeyCount(_ i: Int) -> Int {
        let idx = base + Int32(i)
        guard mf_type(L, idx) == LUA_TTABLE, mf_checkstack(L, 2) != 0 else { return 0 }
        let stack = StackGuard(L)
        _ = stack
        var count = 0
        lua_pushnil(L)
        while mf_next(L, idx) != 0 {
            if mf_type(L, -2) != LUA_TSTRING { count += 1 }
            mf_pop(L, 1)
        }
        return count
    }

    /// Calls `body(key, typeName)` for every string key of the table at `i` (raw, no metamethods).
    package func forEachField(_ i: Int, _ body: (String, String) throws -> Void) throws {
        let idx = base + Int32(i)
        guard mf_type(L, idx) == LUA_TTABLE else { return }
        let stack = StackGuard(L)  // drops the key and value left when `body` throws
        _ = stack
        lua_pushnil(L)
        while mf_next(L, idx) != 0 {
            if mf_type(L, -2) == LUA_TSTRING {
                var len = 0
                let p = mf_tostring_raw(L, -2, &len)!
                let key = String(decoding: UnsafeRawBufferPointer(start: p, count: len), as: UTF8.self)
                let typeName = String(cString: lua_typename(L, mf_type(L, -1)))
                try body(key, typeName)
            }
            mf_pop(L, 1)
        }
    }
}
