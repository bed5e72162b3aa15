import CLua
import CLuaShim

extension LuaState {
    /// Copies the value at `idx` into Swift using raw access only: no
    /// metamethod runs, nothing allocates in Lua, nothing raises.
    ///
    /// - Parameter path: how to name the value in errors (`state`, `action`).
    /// - Throws: `LuaError.conversion` naming the path of a function, userdata,
    ///   thread, cycle, NaN key or too-deep nesting.
    func read(_ L: OpaquePointer, _ idx: Int32, path: String) throws -> LuaValue {
        var visiting = Set<UnsafeRawPointer>()
        return try read(L, mf_absindex(L, idx), path: Path(root: path), visiting: &visiting, depth: 0)
    }

    /// A lazily rendered path (`state.items[3].owner`): built only for errors.
    struct Path {
        let root: String
        var parts: [LuaValue] = []

        func appending(_ key: LuaValue) -> Path { var p = self; p.parts.append(key); return p }

        var description: String {
            var s = root
            for k in parts {
                switch k {
                case .string(let str) where LuaValue.isIdentifier(str.description): s += "." + str.description
                case .string(let str): s += "[\"" + str.description + "\"]"
                case .integer(let i): s += "[\(i)]"
                default: s += "[\(k)]"
                }
            }
            return s
        }
    }

    private func read(_ L: OpaquePointer, _ idx: Int32, path: Path, visiting: inout Set<UnsafeRawPointer>, depth: Int) throws -> LuaValue {
        let idx = idx < 0 ? mf_absindex(L, idx) : idx
        switch mf_type(L, idx) {
        case LUA_TNIL, LUA_TNONE: return .nil
        case LUA_TBOOLEAN: return .boolean(lua_toboolean(L, idx) != 0)
        case LUA_TNUMBER:
            if mf_isinteger(L, idx) != 0 { return .integer(lua_tointegerx(L, idx, nil)) }
            return .number(lua_tonumberx(L, idx, nil))
        case LUA_TSTRING:
            var len = 0
            let p = mf_tostring_raw(L, idx, &len)!
            return .string(LuaString(bytes: Array(UnsafeRawBufferPointer(start: p, count: len))))
        case LUA_TTABLE:
            return try readTable(L, idx, path: path, visiting: &visiting, depth: depth)
        case let t:
            let name = String(cString: lua_typename(L, t))
            throw LuaError.conversion(path: path.description, reason: "a \(name) cannot be copied out of Lua (only nil, booleans, numbers, strings and tables can)")
        }
    }

    private func readTable(_ L: OpaquePointer, _ idx: Int32, path: Path, visiting: inout Set<UnsafeRawPointer>, depth: Int) throws -> LuaValue {
        guard depth < LuaState.maxDepth else {
            throw LuaError.conversion(path: path.description, reason: "nested deeper than \(LuaState.maxDepth) levels")
        }
        let identity = mf_topointer(L, idx)!
        guard visiting.insert(identity).inserted else {
            throw LuaError.conversion(path: path.description, reason: "a cycle: this table contains itself")
        }
        defer { visiting.remove(identity) }
        guard mf_checkstack(L, 4) != 0 else {
            throw LuaError.conversion(path: path.description, reason: "nested too deeply for the Lua stack")
        }
        var table = LuaTable()
        table.isJSONArray = mf_is_json_array(L, idx) != 0
        // Sequence part: 1...n while values are present.
        let border = mf_rawlen(L, idx)
        if border > 0 {
            table.array.reserveCapacity(Int(border))
            var i: lua_Integer = 1
            while i <= lua_Integer(border) {
                if mf_rawgeti(L, idx, i) == LUA_TNIL { mf_pop(L, 1); break }
                let v = try readPopping(L, path: path.appending(.integer(i)), visiting: &visiting, depth: depth + 1)
                table.array.append(v)
                i += 1
            }
        }
        let n = lua_Integer(table.array.count)
        lua_pushnil(L)
        while mf_next(L, idx) != 0 {
            // stack: key, value
            if mf_isinteger(L, -2) != 0 {
                let k = lua_tointegerx(L, -2, nil)
                if k >= 1 && k <= n { mf_pop(L, 1); continue }
            }
            let key: LuaValue
            do {
                key = try read(L, -2, path: path.appending(.string("(key)")), visiting: &visiting, depth: depth + 1)
            } catch {
                mf_pop(L, 2)
                throw error
            }
            if case .number(let d) = key, d.isNaN {
                mf_pop(L, 2)
                throw LuaError.conversion(path: path.description, reason: "a NaN key")
            }
            let value: LuaValue
            do {
                value = try read(L, -1, path: path.appending(key), visiting: &visiting, depth: depth + 1)
            } catch {
                mf_pop(L, 2)
                throw error
            }
            mf_pop(L, 1)
            table.hash[key] = value
        }
        return .table(table)
    }

    private func readPopping(_ L: OpaquePointer, path: Path, visiting: inout Set<UnsafeRawPointer>, depth: Int) throws -> LuaValue {
        defer { mf_pop(L, 1) }
        return try read(L, mf_gettop(L), path: path, visiting: &visiting, depth: depth)
    }
}
