import CLua
import CLuaShim

extension LuaState {
    /// Encodes the value `ref` holds as compact JSON with sorted keys, straight from the
    /// Lua tables: no `LuaValue` is made on the way. The text is the one
    /// `value(of: ref).json(sortedKeys: true)` gives: a table whose keys are exactly 1..n
    /// is an array, an empty table is `[]` when it carries the array marker (`mf.array()`,
    /// an empty JSON array pushed in, a list the state emptied) and `{}` otherwise,
    /// integers stay exact, invalid UTF-8 is repaired.
    ///
    /// Reads raw and never allocates in Lua, so it cannot raise; a read-only view of the
    /// state encodes as the table it shows.
    ///
    /// - Parameter root: how to name the value in error paths (`state`).
    /// - Throws: `LuaError.conversion` naming the path of what JSON cannot hold: NaN or an
    ///   infinity, a function or userdata, a boolean key, a cycle, a table with a metatable
    ///   of its own, nesting deeper than `LuaState.maxDepth`.
    public func jsonBytes(of ref: LuaRef, root: String = "value") throws -> [UInt8] {
        enter(); defer { leave() }
        let L = activeL
        let stack = StackGuard(L)
        guard mf_checkstack(L, 2) != 0 else { throw LuaError.conversion(path: root, reason: "no room on the Lua stack") }
        mf_rawgeti_registry(L, lua_Integer(ref.ref))
        var encoder = LuaJSONEncoder(L: L, writer: JSONWriter(sortedKeys: true, root: root))
        try encoder.write(at: stack.top + 1, depth: 0)
        return encoder.writer.out
    }
}

/// One walk of Lua values into `JSONWriter`'s output. Leaves the stack as it found it.
struct LuaJSONEncoder {
    let L: OpaquePointer
    var writer: JSONWriter
    /// The tables on the current path, to refuse cycles (as deep as the nesting).
    private var open: [UnsafeRawPointer] = []

    init(L: OpaquePointer, writer: JSONWriter) {
        self.L = L
        self.writer = writer
    }

    /// Writes the value at absolute index `idx`. Stack effect: none.
    mutating func write(at idx: Int32, depth: Int) throws(LuaError) {
        switch mf_type(L, idx) {
        case LUA_TNIL, LUA_TNONE: writer.append("null")
        case LUA_TBOOLEAN: writer.append(lua_toboolean(L, idx) != 0 ? "true" : "false")
        case LUA_TNUMBER:
            if mf_isinteger(L, idx) != 0 { writer.appendInteger(lua_tointegerx(L, idx, nil)) } else {
                try writer.appendFloat(lua_tonumberx(L, idx, nil))
            }
        case LUA_TSTRING:
            var len = 0
            let p = mf_tostring_raw(L, idx, &len)!
            writer.appendString(UnsafeBufferPointer(start: UnsafeRawPointer(p).assumingMemoryBound(to: UInt8.self), count: len))
        case LUA_TTABLE:
            if mf_readonly_target(L, idx) != 0 {  // a view: the table it shows
                let top = mf_gettop(L)
                defer { mf_pop(L, 1) }
                try table(at: top, depth: depth)
            } else {
                try table(at: idx, depth: depth)
            }
        case let t:
            let name = String(cString: lua_typename(L, t))
            throw writer.conversionError("a \(name) cannot be written as JSON (only nil, booleans, numbers, strings and tables can)")
        }
    }

    private mutating func table(at idx: Int32, depth: Int) throws(LuaError) {
        guard depth < LuaState.maxDepth else { throw writer.conversionError("nested deeper than \(LuaState.maxDepth) levels") }
        let identity = mf_topointer(L, idx)!
        guard !open.contains(identity) else { throw writer.conversionError("a cycle: this table contains itself") }
        guard mf_metatable_kind(L, idx) < 3 else {
            throw writer.conversionError("a table with a metatable cannot be written as JSON; use a plain table")
        }
        guard mf_checkstack(L, 4) != 0 else { throw writer.conversionError("nested too deeply for the Lua stack") }
        open.append(identity)
        defer { open.removeLast() }
        let top = mf_gettop(L)
        defer { mf_settop(L, top) }
        // The sequence part: 1...n while values are present (as a copy into Swift counts it).
        var n: lua_Integer = 0
        let border = lua_Integer(mf_rawlen(L, idx))
        while n < border {
            let present = mf_rawgeti(L, idx, n + 1) != LUA_TNIL
            mf_pop(L, 1)
            if !present { break }
            n += 1
        }
        var total: lua_Integer = 0
        lua_pushnil(L)
        while mf_next(L, idx) != 0 { mf_pop(L, 1); total += 1 }
        if total == 0 {
            if mf_is_json_array(L, idx) != 0 { writer.append("[]") } else { writer.append("{}") }
        } else if total == n {
            try array(at: idx, count: n, depth: depth)
        } else {
            try object(at: idx, top: top, depth: depth)
        }
    }

    private mutating func array(at idx: Int32, count: lua_Integer, depth: Int) throws(LuaError) {
        writer.out.append(UInt8(ascii: "["))
        writer.keys.append(.nil)
        for i in 1...count {
            if i > 1 { writer.out.append(UInt8(ascii: ",")) }
            writer.keys[writer.keys.count - 1] = .integer(Int64(i))
            mf_rawgeti(L, idx, i)
            try write(at: mf_gettop(L), depth: depth + 1)
            mf_pop(L, 1)
        }
        writer.keys.removeLast()
        writer.out.append(UInt8(ascii: "]"))
    }

    /// Each entry is written where `lua_next` finds it, then the entries are put in key
    /// order: sorting first would mean pushing the keys back, which allocates in Lua.
    private mutating func object(at idx: Int32, top: Int32, depth: Int) throws(LuaError) {
        writer.out.append(UInt8(ascii: "{"))
        let bodyStart = writer.out.count
        var entries: [(key: LuaValue, range: Range<Int>)] = []
        lua_pushnil(L)
        while mf_next(L, idx) != 0 {
            let key = try self.key(at: top + 1)
            writer.keys.append(key)
            let start = writer.out.count
            try writer.writeKey(key)
            writer.out.append(UInt8(ascii: ":"))
            try write(at: top + 2, depth: depth + 1)
            writer.keys.removeLast()
            entries.append((key, start..<writer.out.count))
            mf_pop(L, 1)
        }
        let body = writer.out[bodyStart...]
        var sorted = entries
        sorted.sort { LuaValue.keyOrder($0.key, $1.key) }
        var ordered: [UInt8] = []
        ordered.reserveCapacity(body.count + entries.count)
        for (n, entry) in sorted.enumerated() {
            if n > 0 { ordered.append(UInt8(ascii: ",")) }
            ordered.append(contentsOf: body[entry.range])
        }
        writer.out.replaceSubrange(bodyStart..., with: ordered)
        writer.out.append(UInt8(ascii: "}"))
    }

    /// The key at `idx` as a value to sort by and write.
    private mutating func key(at idx: Int32) throws(LuaError) -> LuaValue {
        switch mf_type(L, idx) {
        case LUA_TNUMBER:
            if mf_isinteger(L, idx) != 0 { return .integer(lua_tointegerx(L, idx, nil)) }
            return .number(lua_tonumberx(L, idx, nil))
        case LUA_TSTRING:
            var len = 0
            let p = mf_tostring_raw(L, idx, &len)!
            return .string(LuaString(bytes: Array(UnsafeRawBufferPointer(start: p, count: len))))
        case LUA_TBOOLEAN:
            return .boolean(lua_toboolean(L, idx) != 0)
        case let t:
            throw writer.conversionError("a \(String(cString: lua_typename(L, t))) key cannot be written as JSON (only string and number keys can)")
        }
    }
}
