/// Turns Lua values into `Decodable` Swift values.
///
///     struct Item: Codable { var id: Int; var title: String; var done: Bool? }
///     let item = try LuaValueDecoder().decode(Item.self, from: ["id": 1, "title": "a"])
///     // Item(id: 1, title: "a", done: nil)
///
/// Tables with string keys feed keyed containers; sequences feed unkeyed
/// containers (a hole decodes as `nil`). An integer type accepts `.integer`
/// and a float with an exact integral value, range-checked; `Double` and
/// `Float` accept both kinds of number. A missing key is `nil`.
public struct LuaValueDecoder: Sendable {
    /// Creates an decoder; it holds no state, so one can serve every thread.
    ///
    ///     let decoder = LuaValueDecoder()
    public init() {}

    /// Decodes a value of the given type from a Lua value.
    ///
    ///     let ids = try LuaValueDecoder().decode([Int].self, from: [1, 2, 3])   // [1, 2, 3]
    ///
    /// - Parameters:
    ///   - type: the type to decode.
    ///   - from: the Lua value to read.
    /// - Returns: the decoded value.
    /// - Throws: `DecodingError` whose `codingPath` leads to the offending
    ///   value and whose message names the expected and the found Lua types
    ///   (`expected a string, found an integer (3)`).
    public func decode<T: Decodable>(_ type: T.Type, from value: LuaValue) throws -> T {
        try LuaDecoding.decode(type, from: value, at: [])
    }
}

/// The pieces shared by the containers of `LuaValueDecoder`.
private enum LuaDecoding {
    static func decode<T: Decodable>(_ type: T.Type, from value: LuaValue, at codingPath: [any CodingKey]) throws -> T {
        // A `LuaValue` (a dynamic view, or a field of one) is the value itself, keys of every kind kept.
        if let same = value as? T { return same }
        return try T(from: Decoder(value: value, codingPath: codingPath))
    }

    /// How a message names what was found (`an integer (3)`, `a table`).
    static func describe(_ value: LuaValue) -> String {
        switch value {
        case .nil: return "nil"
        case .boolean(let b): return "a boolean (\(b))"
        case .integer(let n): return "an integer (\(n))"
        case .number(let d): return "a float (\(LuaValue.formatNumber(d)))"
        case .string(let s):
            let text = s.description
            return text.count <= 40 ? "a string (\"\(text)\")" : "a string (\"\(text.prefix(37))...\")"
        case .table: return "a table"
        }
    }

    /// The error for a value of the wrong Lua type (`valueNotFound` when it is nil).
    static func mismatch(
        _ type: Any.Type, expected: String, found value: LuaValue, at codingPath: [any CodingKey]
    ) -> DecodingError {
        let context = DecodingError.Context(
            codingPath: codingPath, debugDescription: "expected \(expected), found \(describe(value))")
        return value.isNil ? .valueNotFound(type, context) : .typeMismatch(type, context)
    }

    static func table(_ value: LuaValue, for type: Any.Type, at codingPath: [any CodingKey]) throws -> LuaTable {
        guard case .table(let t) = value else {
            throw mismatch(type, expected: "a table", found: value, at: codingPath)
        }
        return t
    }

    /// The elements at keys 1...n of a table that has no other keys; a hole is `.nil`.
    static func sequence(_ value: LuaValue, at codingPath: [any CodingKey]) throws -> [LuaValue] {
        let expected = "a sequence (a table with keys 1...n)"
        let t = try table(value, for: [Any].self, at: codingPath)
        if t.hash.isEmpty { return t.array }
        var last = t.array.count
        for key in t.hash.keys {
            // A table with holes keeps later elements in its hash part; keys far
            // beyond its size make it a sparse table rather than a sequence.
            guard case .integer(let n) = key, n >= 1, n <= Int64(2 * t.count + 8) else {
                throw DecodingError.typeMismatch(
                    [Any].self,
                    .init(
                        codingPath: codingPath,
                        debugDescription: "expected \(expected), found a table with the key \(key)"))
            }
            last = max(last, Int(n))
        }
        return (1...last).map { t[.integer(Int64($0))] }
    }

    /// The `Swift.Decoder` handed to `init(from:)`; it is also its own single-value container.
    final class Decoder: Swift.Decoder {
        let value: LuaValue
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        init(value: LuaValue, codingPath: [any CodingKey]) {
            self.value = value
            self.codingPath = codingPath
        }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            let t = try table(value, for: [String: Any].self, at: codingPath)
            return KeyedDecodingContainer(KeyedContainer<Key>(table: t, codingPath: codingPath))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            UnkeyedContainer(elements: try sequence(value, at: codingPath), codingPath: codingPath)
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer { self }
    }

    struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let table: LuaTable
        let codingPath: [any CodingKey]

        var allKeys: [Key] {
            table.entries.compactMap { entry in
                switch entry.key {
                case .string(let s): Key(stringValue: s.description)
                case .integer(let n): Key(stringValue: "\(n)") ?? Int(exactly: n).flatMap { Key(intValue: $0) }
                default: nil
                }
            }
        }

        /// The value under a key's string, or else under its integer value.
        private func lookup(_ key: Key) -> LuaValue {
            let v = table[.string(LuaString(key.stringValue))]
            if v.isNil, let n = key.intValue { return table[.integer(Int64(n))] }
            return v
        }

        /// The value under a key, which must be present.
        private func require(_ key: Key) throws -> LuaValue {
            let v = lookup(key)
            guard v.isNil else { return v }
            let keys = table.hash.keys.compactMap(\.stringValue).sorted()
            let hint =
                Nearest.name(to: key.stringValue, in: keys).map { "; did you mean \"\($0)\"?" }
                ?? (keys.isEmpty
                    ? "" : "; it has \(keys.prefix(12).joined(separator: ", "))\(keys.count > 12 ? ", ..." : "")")
            throw DecodingError.keyNotFound(
                key,
                .init(
                    codingPath: codingPath,
                    debugDescription:
                        "expected a value for the key \"\(key.stringValue)\", found nil (the table has no such key\(hint))"
                ))
        }

        func contains(_ key: Key) -> Bool { !lookup(key).isNil }

        func decodeNil(forKey key: Key) throws -> Bool { lookup(key).isNil }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            // `decode(Int?.self, forKey:)` of a missing key is nil, not an error.
            let v = type is any ExpressibleByNilLiteral.Type ? lookup(key) : try require(key)
            return try LuaDecoding.decode(type, from: v, at: codingPath + [key])
        }

        func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type, forKey key: Key
        ) throws -> KeyedDecodingContainer<NestedKey> {
            try Decoder(value: try require(key), codingPath: codingPath + [key]).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try Decoder(value: try require(key), codingPath: codingPath + [key]).unkeyedContainer()
        }

        func superDecoder() throws -> any Swift.Decoder {
            let key = LuaCodingKey(stringValue: "super")
            return Decoder(value: table["super"], codingPath: codingPath + [key])
        }

        func superDecoder(forKey key: Key) throws -> any Swift.Decoder {
            Decoder(value: lookup(key), codingPath: codingPath + [key])
        }
    }

    struct UnkeyedContainer: UnkeyedDecodingContainer {
        let elements: [LuaValue]
        let codingPath: [any CodingKey]
        private(set) var currentIndex = 0

        init(elements: [LuaValue], codingPath: [any CodingKey]) {
            self.elements = elements
            self.codingPath = codingPath
        }

        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        /// The next element and its path; past the end is an error.
        private func next(for type: Any.Type) throws -> (value: LuaValue, path: [any CodingKey]) {
            let path = codingPath + [LuaCodingKey(index: currentIndex)]
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(
                    type,
                    .init(
                        codingPath: path,
                        debugDescription:
                            "expected another element, found the end of the sequence (\(elements.count) elements)"))
            }
            return (elements[currentIndex], path)
        }

        mutating func decodeNil() throws -> Bool {
            guard try next(for: Never?.self).value.isNil else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let (v, path) = try next(for: type)
            let decoded = try LuaDecoding.decode(type, from: v, at: path)
            currentIndex += 1
            return decoded
        }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type
        ) throws -> KeyedDecodingContainer<NestedKey> {
            let (v, path) = try next(for: [String: Any].self)
            let container = try Decoder(value: v, codingPath: path).container(keyedBy: type)
            currentIndex += 1
            return container
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let (v, path) = try next(for: [Any].self)
            let container = try Decoder(value: v, codingPath: path).unkeyedContainer()
            currentIndex += 1
            return container
        }

        mutating func superDecoder() throws -> any Swift.Decoder {
            let (v, path) = try next(for: Any.self)
            currentIndex += 1
            return Decoder(value: v, codingPath: path)
        }
    }
}

extension LuaDecoding.Decoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool { value.isNil }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .boolean(let b) = value else {
            throw LuaDecoding.mismatch(type, expected: "a boolean", found: value, at: codingPath)
        }
        return b
    }

    func decode(_ type: String.Type) throws -> String {
        guard case .string(let s) = value else {
            throw LuaDecoding.mismatch(type, expected: "a string", found: value, at: codingPath)
        }
        return s.description
    }

    func decode(_ type: Double.Type) throws -> Double {
        switch value {
        case .number(let d): return d
        case .integer(let n): return Double(n)
        default: throw LuaDecoding.mismatch(type, expected: "a number", found: value, at: codingPath)
        }
    }

    func decode(_ type: Float.Type) throws -> Float {
        let d = try decode(Double.self)
        let f = Float(d)
        guard f.isFinite || !d.isFinite else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: codingPath,
                    debugDescription: "expected a number within Float's range, found \(LuaDecoding.describe(value))"))
        }
        return f
    }

    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try LuaDecoding.decode(type, from: value, at: codingPath)
    }

    /// An integer, or a float with an exact integral value, that fits in `T`.
    private func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        let expected = "an integer (\(T.self))"
        let wide: Int64
        switch value {
        case .integer(let n): wide = n
        case .number(let d):
            guard let n = Int64(exactly: d) else {
                throw LuaDecoding.mismatch(type, expected: expected, found: value, at: codingPath)
            }
            wide = n
        default:
            throw LuaDecoding.mismatch(type, expected: expected, found: value, at: codingPath)
        }
        guard let exact = T(exactly: wide) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: codingPath,
                    debugDescription:
                        "expected \(expected) within \(T.min)...\(T.max), found \(LuaDecoding.describe(value))"))
        }
        return exact
    }
}
