import MoonflowLua
import LuaKit

/// How a kept state compares with a new `initial` after a reload: the keys
/// `initial` adds are filled in, and the keys it no longer has are named.
///
///     let (state, added) = StateShape.filling(["count": 3], from: ["count": 0, "unread": 0])
///     // state: ["count": 3, "unread": 0], added: ["unread"]
///
/// Only objects (tables with keys other than 1...n) are walked, and only
/// through tables present in both: a list's items are data, not shape.
enum StateShape {
    /// `state` with every key of `initial` it lacks added (recursively through
    /// objects present in both), and the dotted paths of those keys.
    static func filling(_ state: LuaValue, from initial: LuaValue, path: String = "") -> (LuaValue, [String]) {
        guard case .table(var kept) = state, case .table(let fresh) = initial, isObject(kept), isObject(fresh) else {
            return (state, [])
        }
        var added: [String] = []
        for key in fresh.hash.keys.sorted(by: { label($0) < label($1) }) {
            let name = path + label(key)
            let value = fresh.hash[key]!
            if kept[key].isNil {
                kept[key] = value
                added.append(name)
            } else {
                let (filled, deeper) = filling(kept[key], from: value, path: name + ".")
                if !deeper.isEmpty { kept[key] = filled; added += deeper }
            }
        }
        return (.table(kept), added)
    }

    /// The dotted paths of keys `state` holds that `initial` does not (through objects present in both).
    /// A field the declared `state` names (an optional one, often never in `initial`) is not
    /// left over: the new code knows it.
    static func leftOver(
        _ state: LuaValue, from initial: LuaValue, declared: SchemaType? = nil, path: String = ""
    ) -> [String] {
        guard case .table(let kept) = state, case .table(let fresh) = initial, isObject(kept), isObject(fresh) else {
            return []
        }
        return kept.hash.keys.sorted(by: { label($0) < label($1) }).flatMap { key -> [String] in
            let name = path + label(key)
            let field = declared?.field(key: key)
            if fresh.hash[key] == nil { return field == nil ? [name] : [] }
            return leftOver(kept.hash[key]!, from: fresh.hash[key]!, declared: field, path: name + ".")
        }
    }

    /// A key as a path shows it: a string bare.
    private static func label(_ key: LuaValue) -> String { key.stringValue ?? key.description }

    /// A table with keys (an empty `initial = {}` is an object too, so new keys fill into it).
    private static func isObject(_ t: LuaTable) -> Bool { !t.hash.isEmpty || (t.array.isEmpty && !t.isJSONArray) }
}
