import CLua
import Foundation
import CLuaShim

extension LuaState {
    /// Copies the value at `idx` into Swift using raw access only: no
    /// metamethod runs, nothing allocates in Lua, nothing raises.
    ///
    /// - Parameter path: how to name the value in errors (`state`, `action`);
    ///   evaluated only for an error.
    /// - Throws: `LuaError.conversion` naming the path of a function, userdata,
    ///   thread, cycle, NaN key or too-deep nesting.
    /// - Parameter refusingMetatables: refuse tables with metatables of their own even
    ///   when the state does not ask for plain data (what JSON is written from).
    func read(
        _ L: OpaquePointer, _ idx: Int32, path: @autoclosure () -> String, refusingMetatables: Bool = false
    ) throws -> LuaValue {
        var reader = ValueReader(L: L, plainData: plainDataOnly)
        reader.refusesMetatables = refusingMetatables
        reader.sharedKeys = sharedKeys
        do {
            return try reader.value(at: mf_absindex(L, idx), depth: 0)
        } catch {
            throw LuaError.conversion(
                path: Path(root: path(), parts: error.keys.reversed()).description, reason: error.reason)
        }
    }
}

/// Why a read stopped, and where: the keys from the failing value up to the root, each
/// table level adding its own while the error passes through (a read that succeeds keeps
/// no path at all).
struct ReadFailure: Error {
    var keys: [LuaValue] = []
    let reason: String
}

/// One copy of a Lua value into Swift (`LuaState.read`). Leaves the stack as it found it.
///
/// Nothing here allocates in Lua, so no garbage collection step can run while it
/// reads: every string stays where it is, and a string's address identifies it
/// for the whole read (the cache below relies on that).
struct ValueReader {
    let L: OpaquePointer
    /// The tables being read (those on the current path), to refuse cycles. As deep as the
    /// nesting, so a linear scan costs less than hashing.
    private var open: [UnsafeRawPointer] = []
    /// Strings copied in this read, by address: the same key in every row of a list is one
    /// interned Lua string, copied once and shared (`LuaString` is copy-on-write).
    private var strings = StringCache()
    /// The keys kept across reads of the state read (`SharedKeys`); nil: this read's own only.
    var sharedKeys: SharedKeys?

    /// Stands for the key of an entry in a path while the key itself is read.
    private static let keyMarker = LuaValue.string(LuaString("(key)"))

    /// Refuse what plain data cannot hold: NaN, keys other than strings and integers,
    /// tables with metatables of their own (`LuaState.plainDataOnly`).
    let plainData: Bool
    /// Refuse tables with metatables of their own (as plain data does) without the rest.
    var refusesMetatables = false

    /// Set `tracksTables` to learn whether one read (or several with the same reader) met a
    /// table twice (`sharedTable`) or went through a view of the state (`sawView`).
    var tracksTables = false
    private(set) var sharedTable = false
    private(set) var sawView = false
    private var tablesSeen: Set<UnsafeRawPointer> = []

    init(L: OpaquePointer, plainData: Bool = false) {
        self.L = L
        self.plainData = plainData
    }

    /// The value at absolute index `idx`. Stack effect: none.
    mutating func value(at idx: Int32, depth: Int) throws(ReadFailure) -> LuaValue {
        switch mf_type(L, idx) {
        case LUA_TNIL, LUA_TNONE: return .nil
        case LUA_TBOOLEAN: return .boolean(lua_toboolean(L, idx) != 0)
        case LUA_TNUMBER:
            if mf_isinteger(L, idx) != 0 { return .integer(lua_tointegerx(L, idx, nil)) }
            let d = lua_tonumberx(L, idx, nil)
            if plainData && !d.isFinite {
                throw ReadFailure(
                    reason: d.isNaN
                        ? "NaN (not a number) cannot be copied out of Lua; use nil, or a number"
                        : "\(d < 0 ? "-" : "")infinity (math.huge) cannot be copied out of Lua; use nil, or a finite number"
                )
            }
            return .number(d)
        case LUA_TSTRING:
            var len = 0
            let p = mf_tostring_raw(L, idx, &len)!
            return .string(strings.string(at: UnsafeRawPointer(p), count: len))
        case LUA_TTABLE:
            // A read-only view of the state (a `handle` passing `state.items` on): the table it shows.
            if mf_readonly_target(L, idx) != 0 {
                if tracksTables { sawView = true }
                let top = mf_gettop(L)
                defer { mf_pop(L, 1) }
                return try table(at: top, depth: depth)
            }
            return try table(at: idx, depth: depth)
        case let t:
            let name = String(cString: lua_typename(L, t))
            throw ReadFailure(
                reason: "a \(name) cannot be copied out of Lua (only nil, booleans, numbers, strings and tables can)")
        }
    }

    /// Refuses too-deep nesting and cycles, makes stack room and marks the table at
    /// `idx` open. Returns the stack top for `leaveTable`.
    fileprivate mutating func enterTable(at idx: Int32, depth: Int) throws(ReadFailure) -> Int32 {
        guard depth < LuaState.maxDepth else {
            throw ReadFailure(reason: "nested deeper than \(LuaState.maxDepth) levels")
        }
        let identity = mf_topointer(L, idx)!
        guard !open.contains(identity) else {
            throw ReadFailure(reason: "a cycle: this table contains itself")
        }
        guard !(plainData || refusesMetatables) || mf_metatable_kind(L, idx) < 3 else {
            throw ReadFailure(
                reason:
                    "a table with a metatable cannot be copied out of Lua (it may read other values than it holds); use a plain table"
            )
        }
        guard mf_checkstack(L, 4) != 0 else {
            throw ReadFailure(reason: "nested too deeply for the Lua stack")
        }
        if tracksTables && !tablesSeen.insert(identity).inserted { sharedTable = true }
        open.append(identity)
        return mf_gettop(L)
    }

    /// Steps `lua_next` past the sequence part's keys (1...n) and reads the next other
    /// key, refusing NaN. Stack effect: key (top + 1) and value (top + 2) on a key;
    /// nothing at the end. The caller pushes the first nil and pops each value.
    fileprivate mutating func nextKey(
        of idx: Int32, top: Int32, sequenceCount n: lua_Integer, depth: Int
    ) throws(ReadFailure) -> LuaValue? {
        while mf_next(L, idx) != 0 {
            if n > 0 && mf_isinteger(L, top + 1) != 0 {
                let k = lua_tointegerx(L, top + 1, nil)
                if k >= 1 && k <= n { mf_pop(L, 1); continue }
            }
            return try key(at: top + 1, depth: depth + 1)
        }
        return nil
    }

    /// The key at absolute index `idx`, refusing NaN and, for plain data, keys other than
    /// strings and integers. Stack effect: none.
    mutating func key(at idx: Int32, depth: Int = 1) throws(ReadFailure) -> LuaValue {
        if let sharedKeys, mf_type(L, idx) == LUA_TSTRING {
            var len = 0
            let p = mf_tostring_raw(L, idx, &len)!
            if let shared = sharedKeys.key(at: UnsafeRawPointer(p), count: len) { return .string(shared) }
        }
        let key: LuaValue
        do { key = try value(at: idx, depth: depth) } catch {
            throw error.under(ValueReader.keyMarker)
        }
        switch key {
        case .string, .integer: return key
        case .number(let d) where d.isNaN: throw ReadFailure(reason: "a NaN key")
        case _ where !plainData: return key
        default:
            throw ReadFailure(
                reason:
                    "a key of type \(key.typeName == "number" ? "float" : key.typeName) (\(key.description)); keys are strings or integers"
            )
        }
    }

    /// Restores the stack top and closes the table `enterTable` opened.
    fileprivate mutating func leaveTable(_ top: Int32) {
        mf_settop(L, top)
        open.removeLast()
    }

    /// The table at absolute index `idx`. Stack effect: none (restored on errors too).
    private mutating func table(at idx: Int32, depth: Int) throws(ReadFailure) -> LuaValue {
        let top = try enterTable(at: idx, depth: depth)
        defer { leaveTable(top) }
        var table = LuaTable()
        table.isJSONArray = mf_is_json_array(L, idx) != 0
        // Sequence part: 1...n while values are present.
        let border = lua_Integer(mf_rawlen(L, idx))
        if border > 0 {
            table.array.reserveCapacity(Int(border))
            var i: lua_Integer = 1
            while i <= border {
                if mf_rawgeti(L, idx, i) == LUA_TNIL { mf_pop(L, 1); break }
                let element: LuaValue
                do { element = try value(at: top + 1, depth: depth + 1) } catch {
                    throw error.under(.integer(i))
                }
                mf_pop(L, 1)
                table.array.append(element)
                i += 1
            }
        }
        let n = lua_Integer(table.array.count)
        // A table without a sequence part is a record: size its dictionary once, not by doubling.
        if n == 0 {
            var count = 0
            lua_pushnil(L)
            while mf_next(L, idx) != 0 { mf_pop(L, 1); count += 1 }
            if count > 0 { table.hash = Dictionary(minimumCapacity: count) }
        }
        lua_pushnil(L)
        while let key = try nextKey(of: idx, top: top, sequenceCount: n, depth: depth) {
            let element: LuaValue
            do { element = try value(at: top + 2, depth: depth + 1) } catch {
                throw error.under(key)
            }
            mf_pop(L, 1)
            table.hash[key] = element
        }
        return .table(table)
    }
}

// MARK: - Refreshing a snapshot: copy only what changed

extension ValueReader {
    /// The value at `idx` compared with `old`, its earlier copy: nil when they are
    /// equal (the caller keeps `old`, sharing its storage), otherwise the new value,
    /// which reuses every unchanged subtree of `old`. Nothing is allocated for the
    /// unchanged parts. Stack effect: none.
    mutating func refreshed(_ old: LuaValue, at idx: Int32, depth: Int) throws(ReadFailure) -> LuaValue? {
        switch mf_type(L, idx) {
        case LUA_TNIL, LUA_TNONE:
            return old.isNil ? nil : .nil
        case LUA_TBOOLEAN:
            let b = lua_toboolean(L, idx) != 0
            if case .boolean(let o) = old, o == b { return nil }
            return .boolean(b)
        case LUA_TNUMBER:
            if mf_isinteger(L, idx) != 0 {
                let i = lua_tointegerx(L, idx, nil)
                if case .integer(let o) = old, o == i { return nil }
                return .integer(i)
            }
            let d = lua_tonumberx(L, idx, nil)
            if case .number(let o) = old, o.bitPattern == d.bitPattern, !d.isNaN { return nil }
            return try value(at: idx, depth: depth)
        case LUA_TSTRING:
            var len = 0
            let p = mf_tostring_raw(L, idx, &len)!
            if case .string(let o) = old, o.bytes.count == len,
                o.bytes.withUnsafeBytes({ len == 0 || memcmp($0.baseAddress!, p, len) == 0 })
            {
                return nil
            }
            return try value(at: idx, depth: depth)
        case LUA_TTABLE:
            // A view of the state (a reducer's `state.b = { a = state.a }`): the table it shows.
            if mf_readonly_target(L, idx) != 0 {
                if tracksTables { sawView = true }
                let top = mf_gettop(L)
                defer { mf_pop(L, 1) }
                return try refreshed(old, at: top, depth: depth)
            }
            guard case .table(let table) = old else { return try value(at: idx, depth: depth) }
            switch try refreshedTable(table, at: idx, depth: depth) {
            case .unchanged: return nil
            case .changed(let value): return value
            case .reread: return keepingArray(try value(at: idx, depth: depth), at: idx, was: table)
            }
        default:
            return try value(at: idx, depth: depth)
        }
    }

    private enum Refresh {
        case unchanged
        case changed(LuaValue)
        /// Keys moved between the sequence and the rest, or went away: copy it whole.
        case reread
    }

    private mutating func refreshedTable(_ old: LuaTable, at idx: Int32, depth: Int) throws(ReadFailure) -> Refresh {
        let top = try enterTable(at: idx, depth: depth)
        defer { leaveTable(top) }
        // Sequence part: compare element by element; elements past the old end are
        // read as new (a list that grows keeps sharing its old items), a shorter one is cut.
        var changedElements: [(Int, LuaValue)] = []
        var appended: [LuaValue] = []
        let border = lua_Integer(mf_rawlen(L, idx))
        var n: lua_Integer = 0
        while n < border {
            if mf_rawgeti(L, idx, n + 1) == LUA_TNIL { mf_pop(L, 1); break }
            do {
                if Int(n) < old.array.count {
                    if let v = try refreshed(old.array[Int(n)], at: top + 1, depth: depth + 1) {
                        changedElements.append((Int(n), v))
                    }
                } else {
                    appended.append(try value(at: top + 1, depth: depth + 1))
                }
            } catch { throw error.under(.integer(n + 1)) }
            mf_pop(L, 1)
            n += 1
        }
        // Old sequence keys past the new end must not linger in the hash part's view.
        if Int(n) < old.array.count, !old.hash.isEmpty { return .reread }
        // The rest: every key must be an old key (or new), and no old key may be missing.
        var changedEntries: [(LuaValue, LuaValue)] = []
        var seen = 0
        var added = 0
        lua_pushnil(L)
        while let key = try nextKey(of: idx, top: top, sequenceCount: n, depth: depth) {
            seen += 1
            do {
                if let oldValue = old.hash[key] {
                    if let v = try refreshed(oldValue, at: top + 2, depth: depth + 1) {
                        changedEntries.append((key, v))
                    }
                } else {
                    added += 1
                    changedEntries.append((key, try value(at: top + 2, depth: depth + 1)))
                }
            } catch { throw error.under(key) }
            mf_pop(L, 1)
        }
        if seen - added != old.hash.count { return .reread }
        let isJSONArray = n == 0 && seen == 0 ? keepsArray(at: idx, was: old) : mf_is_json_array(L, idx) != 0
        if changedElements.isEmpty && changedEntries.isEmpty && appended.isEmpty && Int(n) == old.array.count
            && isJSONArray == old.isJSONArray
        {
            return .unchanged
        }
        var table = old
        if Int(n) < table.array.count { table.array.removeSubrange(Int(n)...) }
        for (i, v) in changedElements { table.array[i] = v }
        table.array += appended
        for (k, v) in changedEntries { table.hash[k] = v }
        table.isJSONArray = isJSONArray
        return .changed(.table(table))
    }
}

extension ValueReader {
    /// Whether the empty table at `idx` encodes as a JSON array: made with `mf.array()`
    /// (the array metatable), or an array in the previous state (`was`) and not marked
    /// otherwise (`mf.object()`, or any metatable). So a list emptied by its last
    /// removal stays `[]` instead of turning into `{}`. Such a table gets the array
    /// marker in Lua too, so JSON written straight from the table (`LuaState.jsonBytes(of:)`)
    /// agrees with the copy.
    fileprivate func keepsArray(at idx: Int32, was old: LuaTable) -> Bool {
        switch mf_json_kind(L, idx) {
        case 1: return true
        case 0:
            guard old.isJSONArray || (!old.array.isEmpty && old.hash.isEmpty) else { return false }
            _ = mf_mark_json_array(L, idx)
            return true
        default: return false
        }
    }

    /// `value`, an empty table read afresh, marked as an array when `keepsArray` says so.
    fileprivate func keepingArray(_ value: LuaValue, at idx: Int32, was old: LuaTable) -> LuaValue {
        guard case .table(var t) = value, t.isEmpty, !t.isJSONArray, keepsArray(at: idx, was: old) else { return value }
        t.isJSONArray = true
        return .table(t)
    }
}

extension LuaState {
    /// Like `read`, but compares with `old`, the earlier copy of the same value, and
    /// copies only what changed: unchanged subtrees are shared with `old`.
    func read(
        _ L: OpaquePointer, _ idx: Int32, refreshing old: LuaValue, path: @autoclosure () -> String
    ) throws -> LuaValue {
        var reader = ValueReader(L: L, plainData: plainDataOnly)
        reader.sharedKeys = sharedKeys
        do {
            return try reader.refreshed(old, at: mf_absindex(L, idx), depth: 0) ?? old
        } catch {
            throw LuaError.conversion(
                path: Path(root: path(), parts: error.keys.reversed()).description, reason: error.reason)
        }
    }
}

extension LuaSlots {
    /// The value at `i` compared with `old`, its earlier copy: copies only what
    /// changed and shares the rest with `old` (a state snapshot after an in-place
    /// reduce costs a walk, not a copy).
    package func value(_ i: Int, refreshing old: LuaValue, path: @autoclosure () -> String) throws -> LuaValue {
        guard i >= 1 && i <= count else { return .nil }
        return try state.read(L, base + Int32(i), refreshing: old, path: path())
    }

    /// Like `value(_:refreshing:path:)`, and whether the table read is plain: no table
    /// met twice (shared by two places) and no view of the state inside it.
    package func stateValue(
        _ i: Int, refreshing old: LuaValue, path: @autoclosure () -> String
    ) throws -> (value: LuaValue, plain: Bool) {
        guard i >= 1 && i <= count else { return (.nil, true) }
        var reader = ValueReader(L: L, plainData: state.plainDataOnly)
        reader.tracksTables = true
        reader.sharedKeys = state.sharedKeys
        do {
            let value = try reader.refreshed(old, at: base + Int32(i), depth: 0) ?? old
            return (value, !reader.sharedTable && !reader.sawView)
        } catch {
            throw LuaError.conversion(
                path: LuaState.Path(root: path(), parts: error.keys.reversed()).description, reason: error.reason)
        }
    }
}

extension ReadFailure {
    /// The same failure one level up: inside the entry at `key`.
    func under(_ key: LuaValue) -> ReadFailure {
        var failure = self
        failure.keys.append(key)
        return failure
    }
}

extension LuaState {
    /// A path into a value (`state.items[3].owner`), rendered for error messages.
    struct Path {
        let root: String
        var parts: [LuaValue] = []

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
}

/// Direct-mapped cache of the strings one read has copied, keyed by their address in Lua.
/// A hit shares the earlier copy; a miss copies the bytes and takes the slot. Small reads
/// (an action, a mutation) never pay for the slots: they are made after the first few copies.
private struct StringCache {
    private static let slots = 64
    private static let copiesBeforeCaching = 8
    private var copies = 0
    private var addresses: [UnsafeRawPointer?] = []
    private var values: [LuaString] = []

    mutating func string(at address: UnsafeRawPointer, count: Int) -> LuaString {
        guard copies >= StringCache.copiesBeforeCaching else {
            copies += 1
            if copies == StringCache.copiesBeforeCaching {
                addresses = Array(repeating: nil, count: StringCache.slots)
                values = Array(repeating: LuaString(bytes: []), count: StringCache.slots)
            }
            return LuaString(bytes: Array(UnsafeRawBufferPointer(start: address, count: count)))
        }
        let slot = Int((UInt(bitPattern: address) >> 4) & UInt(StringCache.slots - 1))
        if addresses[slot] == address { return values[slot] }
        let copy = LuaString(bytes: Array(UnsafeRawBufferPointer(start: address, count: count)))
        addresses[slot] = address
        values[slot] = copy
        return copy
    }
}
