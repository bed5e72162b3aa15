/// A `LuaValue` is `Codable`, so a view that does not know the state's shape ahead of time
/// (`FeatureViewModel<LuaValue>`, a field of type `LuaValue` in a `Decodable` view) takes the
/// value as it is. `LuaValueDecoder` and `LuaValueEncoder` hand it over unchanged; any other
/// coder (`JSONDecoder`, `JSONEncoder`) sees JSON's values:
///
///     let v = try JSONDecoder().decode(LuaValue.self, from: Data(#"{"items":[1,2.5,"x"]}"#.utf8))
///     v["items"]?[2]   // 2.5
///
/// JSON's `null` is `nil` (a hole in an array); an integral number is an integer; an array is a sequence (an empty
/// one stays `[]`). Encoding, a table with keys 1...n only is an array, any other a keyed
/// object whose integer keys are written as text (JSON has no other kind of key).
extension LuaValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .nil; return }
        if let b = try? container.decode(Bool.self) { self = .boolean(b); return }
        if let i = try? container.decode(Int64.self) { self = .integer(i); return }
        if let d = try? container.decode(Double.self) { self = .number(d); return }
        if let s = try? container.decode(String.self) { self = .string(LuaString(s)); return }
        if let items = try? container.decode([LuaValue].self) {
            guard items.contains(where: \.isNil) else {
                self = .table(LuaTable(array: items, isJSONArray: true)); return
            }
            // A null is a hole: later items keep their places, as Lua would hold them.
            var table = LuaTable(isJSONArray: true)
            for (offset, item) in items.enumerated() where !item.isNil { table[.integer(Int64(offset + 1))] = item }
            self = .table(table)
            return
        }
        if let fields = try? container.decode([String: LuaValue].self) {
            var table = LuaTable()
            for (k, v) in fields where !v.isNil { table[.string(LuaString(k))] = v }
            self = .table(table)
            return
        }
        throw DecodingError.dataCorruptedError(
            in: container,
            debugDescription:
                "not a value Lua holds: expected nil, a boolean, a number, a string, an array or an object")
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .nil:
            var c = encoder.singleValueContainer()
            try c.encodeNil()
        case .boolean(let b):
            var c = encoder.singleValueContainer()
            try c.encode(b)
        case .integer(let i):
            var c = encoder.singleValueContainer()
            try c.encode(i)
        case .number(let d):
            var c = encoder.singleValueContainer()
            try c.encode(d)
        case .string(let s):
            var c = encoder.singleValueContainer()
            try c.encode(s.description)
        case .table(let t):
            if t.hash.isEmpty && (!t.array.isEmpty || t.isJSONArray) {
                var c = encoder.unkeyedContainer()
                for item in t.array { try c.encode(item) }
                return
            }
            var c = encoder.container(keyedBy: LuaCodingKey.self)
            for (key, value) in t.entries {
                let name: String
                switch key {
                case .string(let s): name = s.description
                case .integer(let i): name = String(i)
                default:
                    throw EncodingError.invalidValue(
                        self,
                        .init(
                            codingPath: encoder.codingPath,
                            debugDescription:
                                "a table key of type \(key.typeName) (\(key)) has no form outside Lua; use string or integer keys"
                        ))
                }
                try c.encode(value, forKey: LuaCodingKey(stringValue: name))
            }
        }
    }
}
