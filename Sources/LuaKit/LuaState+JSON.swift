import CLua
import CLuaShim
import Foundation

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
        // One C walk; for what it gives up on, the Swift walk, which names the path.
        if let text = Self.jsonInC(L, at: stack.top + 1) { return text }
        var encoder = LuaJSONEncoder(L: L, writer: JSONWriter(sortedKeys: true, root: root))
        try encoder.write(at: stack.top + 1, depth: 0)
        return encoder.writer.out
    }

    /// What `mf_json_encode` writes for the value at `idx`, or nil when it gives up.
    private static func jsonInC(_ L: OpaquePointer, at idx: Int32) -> [UInt8]? {
        var out = mf_json_out(data: nil, len: 0, cap: 0)
        defer { free(out.data) }
        guard mf_json_encode(L, idx, &out, jsonFloatText) == 0 else { return nil }
        return out.len == 0 ? [] : Array(UnsafeRawBufferPointer(start: out.data, count: out.len))
    }

    /// The C walk alone (nil where it gives up), for tests that tell the two walks apart.
    package func jsonBytesInC(of ref: LuaRef) -> [UInt8]? {
        enter(); defer { leave() }
        let L = activeL
        let stack = StackGuard(L)
        guard mf_checkstack(L, 2) != 0 else { return nil }
        mf_rawgeti_registry(L, lua_Integer(ref.ref))
        return Self.jsonInC(L, at: stack.top + 1)
    }
}

/// How `mf_json_encode` writes a float: as `JSONWriter` does. 0 when it does not fit.
private let jsonFloatText: mf_json_float_text = { d, buffer, capacity in
    guard let buffer else { return 0 }
    var count = 0
    var fits = true
    JSONWriter.floatText(d) { piece in
        for byte in piece {
            guard count < Int(capacity) else { fits = false; return }
            buffer[count] = CChar(bitPattern: byte)
            count += 1
        }
    }
    return fits ? Int32(count) : 0
}

/// One walk of Lua values into `JSONWriter`'s output, for what `mf_json_encode` gives up
/// on (its error names the path). Leaves the stack as it found it.
///
/// Nothing here allocates in Lua, so no garbage collection step runs during the walk and
/// every string stays where it is: keys are sorted by their bytes in place, not copied.
struct LuaJSONEncoder {
    let L: OpaquePointer
    var writer: JSONWriter
    /// The tables on the current path, to refuse cycles (as deep as the nesting).
    private var open: [UnsafeRawPointer] = []
    /// The keys from the root to the value being written, made into a path only for an error.
    private var path: [Key] = []
    /// The entries of the objects being written, innermost last (one buffer for all of them).
    private var entries: [(key: Key, range: Range<Int>)] = []
    /// Where an object's entries are copied to be put in order (reused).
    private var scratch: [UInt8] = []

    init(L: OpaquePointer, writer: JSONWriter) {
        self.L = L
        self.writer = writer
    }

    /// A key as Lua holds it: a string is its bytes inside Lua.
    enum Key {
        case integer(Int64)
        case number(Double)
        case string(UnsafeRawBufferPointer)
        case boolean(Bool)

        /// `LuaValue.keyOrder`: numbers by value (an integer before an equal float), then
        /// strings by their bytes, then booleans.
        static func precedes(_ a: Key, _ b: Key) -> Bool {
            switch (a, b) {
            case (.integer(let x), .integer(let y)): return x < y
            case (.string(let x), .string(let y)):
                let common = min(x.count, y.count)
                let order = common == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, common)
                return order != 0 ? order < 0 : x.count < y.count
            case (.boolean(let x), .boolean(let y)): return !x && y
            case (.integer(let x), .number(let y)): return Double(x) <= y
            case (.number(let x), .integer(let y)): return x < Double(y)
            case (.number(let x), .number(let y)): return x < y
            default: return a.rank < b.rank
            }
        }

        private var rank: Int {
            switch self {
            case .integer, .number: 0
            case .string: 1
            case .boolean: 2
            }
        }

        var value: LuaValue {
            switch self {
            case .integer(let i): .integer(i)
            case .number(let d): .number(d)
            case .string(let bytes): .string(LuaString(bytes: Array(bytes)))
            case .boolean(let b): .boolean(b)
            }
        }
    }

    private func failure(_ reason: String) -> LuaError {
        LuaError.conversion(path: LuaState.Path(root: writer.root, parts: path.map(\.value)).description, reason: reason)
    }

    private mutating func number(_ d: Double) throws(LuaError) {
        guard d.isFinite else {
            throw failure("\(LuaValue.formatNumber(d)) cannot be written as JSON (only finite numbers can)")
        }
        try writer.appendFloat(d)
    }

    /// Writes the value at absolute index `idx`. Stack effect: none.
    mutating func write(at idx: Int32, depth: Int) throws(LuaError) {
        switch mf_type(L, idx) {
        case LUA_TNIL, LUA_TNONE: writer.append("null")
        case LUA_TBOOLEAN: writer.append(lua_toboolean(L, idx) != 0 ? "true" : "false")
        case LUA_TNUMBER:
            if mf_isinteger(L, idx) != 0 { writer.appendInteger(lua_tointegerx(L, idx, nil)) } else {
                try number(lua_tonumberx(L, idx, nil))
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
            throw failure("a \(name) cannot be written as JSON (only nil, booleans, numbers, strings and tables can)")
        }
    }

    private mutating func table(at idx: Int32, depth: Int) throws(LuaError) {
        guard depth < LuaState.maxDepth else { throw failure("nested deeper than \(LuaState.maxDepth) levels") }
        let identity = mf_topointer(L, idx)!
        guard !open.contains(identity) else { throw failure("a cycle: this table contains itself") }
        guard mf_metatable_kind(L, idx) < 3 else {
            throw failure("a table with a metatable cannot be written as JSON; use a plain table")
        }
        guard mf_checkstack(L, 4) != 0 else { throw failure("nested too deeply for the Lua stack") }
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
        if n > 0 {
            // A list when no other key is there.
            var total: lua_Integer = 0
            lua_pushnil(L)
            while mf_next(L, idx) != 0 { mf_pop(L, 1); total += 1 }
            if total == n { return try array(at: idx, count: n, depth: depth) }
        }
        try object(at: idx, top: top, depth: depth)
    }

    private mutating func array(at idx: Int32, count: lua_Integer, depth: Int) throws(LuaError) {
        writer.out.append(UInt8(ascii: "["))
        path.append(.integer(0))
        for i in 1...count {
            if i > 1 { writer.out.append(UInt8(ascii: ",")) }
            path[path.count - 1] = .integer(Int64(i))
            mf_rawgeti(L, idx, i)
            try write(at: mf_gettop(L), depth: depth + 1)
            mf_pop(L, 1)
        }
        path.removeLast()
        writer.out.append(UInt8(ascii: "]"))
    }

    /// Each entry is written where `lua_next` finds it, then the entries are put in key
    /// order (when they are not in it already): sorting first would mean pushing the keys
    /// back to read the values, which allocates in Lua.
    private mutating func object(at idx: Int32, top: Int32, depth: Int) throws(LuaError) {
        let bodyStart = writer.out.count + 1
        writer.out.append(UInt8(ascii: "{"))
        let first = entries.count
        defer { entries.removeSubrange(first...) }
        var inOrder = true
        lua_pushnil(L)
        while mf_next(L, idx) != 0 {
            let key = try self.key(at: top + 1)
            if entries.count > first {
                if inOrder, !Key.precedes(entries[entries.count - 1].key, key) { inOrder = false }
                writer.out.append(UInt8(ascii: ","))
            }
            let start = writer.out.count
            path.append(key)
            try writeKey(key)
            writer.out.append(UInt8(ascii: ":"))
            try write(at: top + 2, depth: depth + 1)
            path.removeLast()
            entries.append((key, start..<writer.out.count))
            mf_pop(L, 1)
        }
        if entries.count == first {
            writer.out.removeLast()
            if mf_is_json_array(L, idx) != 0 { writer.append("[]") } else { writer.append("{}") }
            return
        }
        if !inOrder {
            entries[first...].sort { Key.precedes($0.key, $1.key) }
            scratch.removeAll(keepingCapacity: true)
            scratch.append(contentsOf: writer.out[bodyStart...])
            writer.out.removeSubrange(bodyStart...)
            for n in first..<entries.count {
                if n > first { writer.out.append(UInt8(ascii: ",")) }
                let range = entries[n].range
                writer.out.append(contentsOf: scratch[(range.lowerBound - bodyStart)..<(range.upperBound - bodyStart)])
            }
        }
        writer.out.append(UInt8(ascii: "}"))
    }

    /// The key at `idx`; a string's bytes stay inside Lua.
    private func key(at idx: Int32) throws(LuaError) -> Key {
        switch mf_type(L, idx) {
        case LUA_TNUMBER:
            if mf_isinteger(L, idx) != 0 { return .integer(lua_tointegerx(L, idx, nil)) }
            return .number(lua_tonumberx(L, idx, nil))
        case LUA_TSTRING:
            var len = 0
            let p = mf_tostring_raw(L, idx, &len)!
            return .string(UnsafeRawBufferPointer(start: p, count: len))
        case LUA_TBOOLEAN:
            return .boolean(lua_toboolean(L, idx) != 0)
        case let t:
            throw failure("a \(String(cString: lua_typename(L, t))) key cannot be written as JSON (only string and number keys can)")
        }
    }

    private mutating func writeKey(_ key: Key) throws(LuaError) {
        switch key {
        case .string(let bytes): writer.appendString(bytes.assumingMemoryBound(to: UInt8.self))
        case .integer(let n):
            writer.out.append(UInt8(ascii: "\""))
            writer.appendInteger(n)
            writer.out.append(UInt8(ascii: "\""))
        case .number(let d):
            writer.out.append(UInt8(ascii: "\""))
            try number(d)
            writer.out.append(UInt8(ascii: "\""))
        case .boolean:
            throw failure("a boolean key cannot be written as JSON (only string and number keys can)")
        }
    }
}
