import LuaKit

/// A view a `FeatureViewModel` keeps current change by change: a reduce that writes
/// `state.items[3].qty` costs decoding that one integer and writing it at `items[2].qty`,
/// not decoding the whole state again. The structs `moonflow types --swift` generates conform;
/// a hand-written `Decodable` view conforms with a `patch` that hands each field to
/// `Self.patch(&field, path.dropFirst(), to: value)`:
///
///     struct CartView: Decodable, PatchableView {
///         var items: [Line]
///         var total: Int
///         mutating func patch(_ path: ArraySlice<LuaValue>, to value: LuaValue) throws -> Bool {
///             switch path.first?.stringValue {
///             case "items": try Self.patch(&items, path.dropFirst(), to: value)
///             case "total": try Self.patch(&total, path.dropFirst(), to: value)
///             default: true   // a field the view leaves out, as decoding it would
///             }
///         }
///     }
///
/// A view that does not conform is decoded whole after every change.
public protocol PatchableView: Decodable {
    /// Writes `value`, decoded, at `path` below this value. `path` is never empty: its keys are
    /// as the state has them (a field's name, a list's index from 1). Returns false when this
    /// view cannot take the change in place (the model then decodes the whole state); a
    /// thrown error is a value that does not decode.
    mutating func patch(_ path: ArraySlice<LuaValue>, to value: LuaValue) throws -> Bool

    /// The state's name of the top-level field `keyPath` reads (`\.total`: `"total"`), or nil:
    /// what lets `model.total` be observed apart from `model.items`. The default knows none.
    static func field(of keyPath: PartialKeyPath<Self>) -> String?
}

extension PatchableView {
    public static func field(of keyPath: PartialKeyPath<Self>) -> String? { nil }

    /// A field that takes only a whole new value (a number, a string, an enum, a `table`, an
    /// optional one of them: nil decodes as nil).
    @inlinable
    public static func patch<T: Decodable>(
        _ field: inout T, _ path: ArraySlice<LuaValue>, to value: LuaValue
    ) throws -> Bool {
        guard path.isEmpty else { return false }
        field = try Leaf.decode(T.self, from: value)
        return true
    }

    /// A field that is itself patchable (a nested record).
    @inlinable
    public static func patch<T: PatchableView>(
        _ field: inout T, _ path: ArraySlice<LuaValue>, to value: LuaValue
    ) throws -> Bool {
        guard !path.isEmpty else {
            field = try Leaf.decode(T.self, from: value)
            return true
        }
        return try field.patch(path, to: value)
    }

    /// An optional nested record.
    @inlinable
    public static func patch<T: PatchableView>(
        _ field: inout T?, _ path: ArraySlice<LuaValue>, to value: LuaValue
    ) throws -> Bool {
        guard !path.isEmpty else {
            field = value.isNil ? nil : try Leaf.decode(T.self, from: value)
            return true
        }
        guard field != nil else { return false }
        return try field!.patch(path, to: value)
    }

    /// A list: one item set, one appended at the end, the last removed.
    @inlinable
    public static func patch<T: Decodable>(
        _ field: inout [T], _ path: ArraySlice<LuaValue>, to value: LuaValue
    ) throws -> Bool {
        try ListPatch.patch(&field, path, value) { _, _, _ in false }
    }

    /// A list of records: also a change inside one item.
    @inlinable
    public static func patch<T: PatchableView>(
        _ field: inout [T], _ path: ArraySlice<LuaValue>, to value: LuaValue
    ) throws -> Bool {
        try ListPatch.patch(&field, path, value) { item, rest, value in try item.patch(rest, to: value) }
    }

    /// A map (string keys): one entry set or removed.
    @inlinable
    public static func patch<T: Decodable>(
        _ field: inout [String: T], _ path: ArraySlice<LuaValue>, to value: LuaValue
    ) throws -> Bool {
        try MapPatch.patch(&field, path, value) { _, _, _ in false }
    }

    /// A map of records: also a change inside one entry.
    @inlinable
    public static func patch<T: PatchableView>(
        _ field: inout [String: T], _ path: ArraySlice<LuaValue>, to value: LuaValue
    ) throws -> Bool {
        try MapPatch.patch(&field, path, value) { entry, rest, value in try entry.patch(rest, to: value) }
    }
}

/// A change to a list at `path` (its first key the index from 1): a whole new list, one item
/// set, one appended, the last removed; below an item, `inner`. Anything else (a hole, an
/// index past the end) is left to a whole decode.
@usableFromInline
enum ListPatch {
    @usableFromInline
    static func patch<T: Decodable>(
        _ list: inout [T], _ path: ArraySlice<LuaValue>, _ value: LuaValue,
        inner: (inout T, ArraySlice<LuaValue>, LuaValue) throws -> Bool
    ) throws -> Bool {
        guard let first = path.first else {
            list = try LuaValueDecoder().decode([T].self, from: value)
            return true
        }
        guard case .integer(let index) = first, index >= 1, index <= Int64(list.count) + 1 else { return false }
        let i = Int(index - 1)
        if path.count > 1 {
            guard i < list.count else { return false }
            return try inner(&list[i], path.dropFirst(), value)
        }
        if value.isNil {
            guard i == list.count - 1 else { return false }
            list.removeLast()
            return true
        }
        let item = try Leaf.decode(T.self, from: value)
        if i == list.count { list.append(item) } else { list[i] = item }
        return true
    }
}

/// A change to a map at `path` (its first key a string): a whole new map, one entry set or
/// removed; below an entry, `inner`.
@usableFromInline
enum MapPatch {
    @usableFromInline
    static func patch<T: Decodable>(
        _ map: inout [String: T], _ path: ArraySlice<LuaValue>, _ value: LuaValue,
        inner: (inout T, ArraySlice<LuaValue>, LuaValue) throws -> Bool
    ) throws -> Bool {
        guard let first = path.first else {
            map = try LuaValueDecoder().decode([String: T].self, from: value)
            return true
        }
        guard case .string(let name) = first, name.isValidUTF8 else { return false }
        let key = name.description
        if path.count > 1 {
            guard map[key] != nil else { return false }
            return try inner(&map[key]!, path.dropFirst(), value)
        }
        if value.isNil {
            map.removeValue(forKey: key)
        } else {
            map[key] = try Leaf.decode(T.self, from: value)
        }
        return true
    }
}

/// A value as `LuaValueDecoder` decodes it: a plain integer, string, boolean or float into
/// `Int`, `String`, `Bool` or `Double` (optional or not) directly, since most changes are one
/// of those; anything else through the decoder.
@usableFromInline
enum Leaf {
    @usableFromInline
    static func decode<T: Decodable>(_ type: T.Type, from value: LuaValue) throws -> T {
        switch value {
        case .integer(let n): if let v = Int(n) as? T { return v }
        case .string(let s):
            if T.self == String.self || T.self == String?.self, let v = s.description as? T { return v }
        case .boolean(let b): if let v = b as? T { return v }
        case .number(let d): if let v = d as? T { return v }
        default: break
        }
        return try LuaValueDecoder().decode(T.self, from: value)
    }
}
