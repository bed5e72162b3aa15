import CLua
import CLuaShim

extension LuaSlots {
    /// Brings `snapshot` up to date with the writes listed in the table at slot `i`, as
    /// the state's write views logged them: `count` slots laid out per write as the number
    /// of keys `n`, the `n` keys from the root, the written table, the value now there.
    /// Only the written entries are read, each compared with its old copy (unchanged parts
    /// stay shared), so a one-field change of a large state costs that field.
    ///
    /// - Parameter root: how the state is named in errors (`state`).
    /// - Returns: the changes in the order written, or nil when the writes cannot be taken
    ///   one by one: a table met twice (stored in two places), a view of the state stored
    ///   inside new data, or a path that does not lead through `snapshot`'s tables. The
    ///   caller then reads the whole state; `snapshot` is as it was before the writes, so
    ///   it can say what the state was (a patch from it is right).
    /// - Throws: `LuaError.conversion` naming the path, for what plain data cannot hold.
    package func applyStateWrites(
        _ i: Int, count: Int, root: String, to snapshot: inout LuaValue
    ) throws -> [StateChange]? {
        guard i >= 1 && i <= self.count, mf_type(L, base + Int32(i)) == LUA_TTABLE, mf_checkstack(L, 4) != 0 else {
            return nil
        }
        let list = base + Int32(i)
        var reader = ValueReader(L: L, plainData: state.plainDataOnly)
        reader.tracksTables = true
        reader.sharedKeys = state.sharedKeys
        var changes: [StateChange] = []
        var at: lua_Integer = 1
        let end = lua_Integer(count)
        let stack = StackGuard(L)
        let top = stack.top
        while at <= end {
            mf_rawgeti(L, list, at)
            let keyCount = lua_Integer(lua_tointegerx(L, -1, nil))
            mf_pop(L, 1)
            guard keyCount >= 1 else { revert(changes, in: &snapshot); return nil }
            var path: [LuaValue] = []
            path.reserveCapacity(Int(keyCount))
            for k in 1...keyCount {
                mf_rawgeti(L, list, at + k)
                defer { mf_pop(L, 1) }
                do { path.append(try reader.key(at: top + 1)) } catch {
                    revert(changes, in: &snapshot)
                    throw LuaError.conversion(
                        path: LuaState.Path(root: root, parts: path).description, reason: error.reason)
                }
            }
            mf_rawgeti(L, list, at + keyCount + 1)  // the written table: top + 1
            mf_rawgeti(L, list, at + keyCount + 2)  // the value: top + 2
            var failure: ReadFailure?
            let entry = LuaValue.update(&snapshot, at: path[...]) { old, parentWasArray in
                let new: LuaValue
                do throws(ReadFailure) {
                    new =
                        mf_type(L, top + 2) == LUA_TTABLE
                        ? try reader.refreshed(old, at: top + 2, depth: path.count) ?? old
                        : try reader.value(at: top + 2, depth: path.count)
                } catch { failure = error; return nil }
                // An entry removed from a table that is empty now: `[]` stays `[]` (as a refresh keeps it).
                var emptiedKind: Int32?
                if new.isNil && mf_rawlen(L, top + 1) == 0 {
                    lua_pushnil(L)
                    if mf_next(L, top + 1) == 0 { emptiedKind = mf_json_kind(L, top + 1) } else { mf_pop(L, 2) }
                }
                return (
                    new,
                    emptiedKind.map { kind in
                        guard kind == 0 else { return kind == 1 }
                        // The Lua table says so too, so JSON written straight from it agrees.
                        if parentWasArray { _ = mf_mark_json_array(L, top + 1) }
                        return parentWasArray
                    }
                )
            }
            if let failure {
                revert(changes, in: &snapshot)
                throw LuaError.conversion(
                    path: LuaState.Path(root: root, parts: path + failure.keys.reversed()).description,
                    reason: failure.reason)
            }
            mf_settop(L, top)
            guard let entry else { revert(changes, in: &snapshot); return nil }
            changes.append(StateChange(path: path, old: entry.old, new: entry.new))
            guard !reader.sharedTable, !reader.sawView else { revert(changes, in: &snapshot); return nil }
            at += keyCount + 3
        }
        return changes
    }
}

/// Puts the old values of `changes` back (newest first): nothing of a failed reduce stays.
package func revert(_ changes: [StateChange], in snapshot: inout LuaValue) {
    for change in changes.reversed() {
        _ = LuaValue.update(&snapshot, at: change.path[...]) { _, _ in (change.old, nil) }
    }
}

extension LuaValue {
    /// Replaces the entry at `path` inside `target` with what `body` makes of the old one
    /// (and, when the entry's table ends up empty, whether it is a JSON array); in place
    /// where the storage is not shared.
    ///
    /// - Parameter body: gets the old value and whether its table was an array; nil stops.
    /// - Returns: the old and new values, or nil when the path does not lead through tables or `body` stopped.
    static func update(
        _ target: inout LuaValue, at path: ArraySlice<LuaValue>,
        _ body: (LuaValue, Bool) -> (LuaValue, Bool?)?
    ) -> (old: LuaValue, new: LuaValue)? {
        guard case .table(var table) = target else { return nil }
        target = .nil  // `table` is now the only reference: changed in place
        defer { target = .table(table) }
        let key = LuaTable.normalize(path.first!)
        if path.count == 1 {
            // A key the hash part holds (a record's field: the common write) is found once and
            // its value replaced in place; anything else goes through the table's own rules.
            let index = table.hash.index(forKey: key)
            let old = index.map { table.hash.values[$0] } ?? table[key]
            guard let (new, emptiedArray) = body(old, table.isJSONArray || (!table.array.isEmpty && table.hash.isEmpty))
            else { return nil }
            if let index, !new.isNil { table.hash.values[index] = new; return (old, new) }
            table[key] = new
            if table.isEmpty, let emptiedArray { table.isJSONArray = emptiedArray }
            return (old, new)
        }
        if case .integer(let i) = key, i >= 1, i <= Int64(table.array.count) {
            return update(&table.array[Int(i - 1)], at: path.dropFirst(), body)
        }
        guard table.hash[key] != nil else { return nil }
        return update(&table.hash[key]!, at: path.dropFirst(), body)
    }
}
