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
    /// One C walk (`mf_json_encode`): raw reads, nothing allocated in Lua, so it cannot
    /// raise; a read-only view of the state encodes as the table it shows.
    ///
    /// - Parameter root: how to name the value in error paths (`state`).
    /// - Throws: `LuaError.conversion` naming the path of what JSON cannot hold: NaN or an
    ///   infinity, a function or userdata, a boolean key, a cycle, a table with a metatable
    ///   of its own, nesting deeper than `LuaState.maxDepth`.
    public func jsonBytes(of ref: LuaRef, root: String = "value") throws -> [UInt8] {
        enter(); defer { leave() }
        let L = activeL
        let stack = StackGuard(L)
        guard mf_checkstack(L, 2) != 0 else {
            throw LuaError.conversion(path: root, reason: "no room on the Lua stack")
        }
        mf_rawgeti_registry(L, lua_Integer(ref.ref))
        if let text = Self.jsonInC(L, at: stack.top + 1) { return text }
        // What the C walk gives up on (rare: invalid UTF-8 to repair, or what JSON cannot
        // hold): copied and written as any value is, so errors name the path.
        return try read(L, stack.top + 1, path: root, refusingMetatables: true).jsonBytes(sortedKeys: true, root: root)
    }

    /// What `mf_json_encode` writes for the value at `idx`, or nil when it gives up.
    private static func jsonInC(_ L: OpaquePointer, at idx: Int32) -> [UInt8]? {
        var out = mf_json_out(data: nil, len: 0, cap: 0)
        defer { free(out.data) }
        guard mf_json_encode(L, idx, &out, jsonFloatText) == 0 else { return nil }
        return out.len == 0 ? [] : Array(UnsafeRawBufferPointer(start: out.data, count: out.len))
    }

    /// The C walk alone (nil where it gives up), for tests that tell the two paths apart.
    package func jsonBytesInC(of ref: LuaRef) -> [UInt8]? {
        enter(); defer { leave() }
        let L = activeL
        let stack = StackGuard(L)
        guard mf_checkstack(L, 2) != 0 else { return nil }
        mf_rawgeti_registry(L, lua_Integer(ref.ref))
        return Self.jsonInC(L, at: stack.top + 1)
    }
}

extension LuaState {
    /// Parses `json` straight into a Lua value and hands it to `body` as slot 1, while it
    /// is on the stack (to check it in place, or take a ref to it): no `LuaValue` is made
    /// on the way. The value is the one `LuaValue(jsonBytes:)` gives once pushed: integers
    /// exact, a `null` member absent, a `null` element a hole, an array with no element
    /// marked as an array, strings as their bytes.
    ///
    ///     try lua.withJSON(bytes) { slots in try slots.ref(1) }
    ///
    /// One C pass (`mf_json_decode`) does the work; on any mistake in the text, or nesting
    /// deeper than `LuaState.maxDepth`, the Swift reader parses it instead, so the error
    /// is the same as `LuaValue(jsonBytes:)`'s.
    ///
    /// - Throws: `JSONError` with the line and column of the first mistake; `LuaError.memory`.
    public func withJSON<R>(_ json: UnsafeRawBufferPointer, _ body: (LuaSlots) throws -> R) throws -> R {
        enter(); defer { leave() }
        let L = activeL
        let stack = StackGuard(L)
        guard mf_checkstack(L, 4) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        let status = Self.decodeInC(L, json)
        if status == MF_JSON_SLOW {
            try push(try LuaValue(jsonBytes: json), on: L)
        } else if status != LUA_OK {
            throw popError(status, L)
        }
        return try body(LuaSlots(state: self, L: L, base: stack.top, count: 1))
    }

    /// Whether the C pass alone reads `json` (false where it gives up to the Swift reader),
    /// for tests that tell the two paths apart.
    package func readsJSONInC(_ json: UnsafeRawBufferPointer) -> Bool {
        enter(); defer { leave() }
        let L = activeL
        let stack = StackGuard(L)
        _ = stack
        guard mf_checkstack(L, 4) != 0 else { return false }
        return Self.decodeInC(L, json) == LUA_OK
    }

    /// `mf_json_decode` of `json` on `L`: LUA_OK with the value pushed, MF_JSON_SLOW with
    /// nothing pushed, or an error status with the message pushed.
    private static func decodeInC(_ L: OpaquePointer, _ json: UnsafeRawBufferPointer) -> Int32 {
        mf_json_decode(L, json.baseAddress?.assumingMemoryBound(to: CChar.self), json.count, jsonParseFloat)
    }
}

/// How `mf_json_decode` reads a float: as `JSONReader` does (finite values only).
private let jsonParseFloat: mf_json_parse_float = { text, count, out in
    guard let out, let d = JSONReader.finiteDouble(UnsafeRawBufferPointer(start: text, count: count)) else { return 0 }
    out.pointee = d
    return 1
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
