/// Turns `Encodable` Swift values into Lua values.
///
///     struct Item: Codable { var id: Int; var title: String; var tags: [String] }
///     let v = try LuaValueEncoder().encode(Item(id: 1, title: "a", tags: []))
///     // { id = 1, tags = {}, title = "a" } with `tags` an empty sequence
///
/// Keyed containers become tables with string keys; unkeyed containers become
/// sequences (`isJSONArray` set, so an empty one writes as `[]`). Integers
/// become `.integer`, `Float` and `Double` become `.number`, and `nil` leaves
/// a key absent (or a hole in a sequence), as in Lua.
public struct LuaValueEncoder: Sendable {
    /// Creates an encoder; it holds no state, so one can serve every thread.
    ///
    ///     let encoder = LuaValueEncoder()
    public init() {}

    /// Encodes a value as a Lua value.
    ///
    ///     let v = try LuaValueEncoder().encode(["a": 1, "b": 2])   // { a = 1, b = 2 }
    ///
    /// - Parameter value: the value to encode.
    /// - Returns: the Lua value; a type that encodes nothing gives an empty table.
    /// - Throws: `EncodingError.invalidValue` for an integer outside `Int64`'s range.
    public func encode<T: Encodable>(_ value: T) throws -> LuaValue {
        try LuaEncoding.encode(value, at: [])
    }
}

/// The pieces shared by the containers of `LuaValueEncoder`.
private enum LuaEncoding {
    /// A value under construction: containers may still be adding to it.
    enum Node {
        case value(LuaValue)
        case keyed(KeyedBox)
        case unkeyed(UnkeyedBox)
        case encoder(Encoder)

        var finished: LuaValue {
            switch self {
            case .value(let v): v
            case .keyed(let box): box.finished
            case .unkeyed(let box): box.finished
            case .encoder(let encoder): encoder.finished
            }
        }
    }

    final class KeyedBox {
        var members: [String: Node] = [:]

        var finished: LuaValue {
            var table = LuaTable()
            table.hash.reserveCapacity(members.count)
            for (key, node) in members {
                let v = node.finished
                if !v.isNil { table.hash[.string(LuaString(key))] = v }
            }
            return .table(table)
        }
    }

    final class UnkeyedBox {
        var elements: [Node] = []

        var finished: LuaValue {
            let values = elements.map(\.finished)
            guard values.contains(where: \.isNil) else { return .table(LuaTable(array: values, isJSONArray: true)) }
            // A nil element is a hole: later elements go where Lua would put them.
            var table = LuaTable(isJSONArray: true)
            for (offset, v) in values.enumerated() where !v.isNil { table[.integer(Int64(offset + 1))] = v }
            return .table(table)
        }
    }

    /// Encodes one value with its own encoder and returns the result.
    static func encode<T: Encodable>(_ value: T, at codingPath: [any CodingKey]) throws -> LuaValue {
        if let primitive = try primitive(value, at: codingPath) { return primitive }
        let encoder = Encoder(codingPath: codingPath)
        try value.encode(to: encoder)
        return encoder.finished
    }

    /// Strings, booleans and numbers directly, without an encoder.
    static func primitive<T: Encodable>(_ value: T, at codingPath: [any CodingKey]) throws -> LuaValue? {
        switch value {
        case let v as LuaValue: return v
        case let v as String: return .string(LuaString(v))
        case let v as Bool: return .boolean(v)
        case let v as Double: return .number(v)
        case let v as Float: return .number(Double(v))
        case let v as any FixedWidthInteger: return try integer(v, at: codingPath)
        default: return nil
        }
    }

    static func integer(_ v: some FixedWidthInteger, at codingPath: [any CodingKey]) throws -> LuaValue {
        guard let exact = Int64(exactly: v) else {
            throw EncodingError.invalidValue(
                v,
                .init(
                    codingPath: codingPath,
                    debugDescription: "\(v) does not fit in a Lua integer (Int64 holds \(Int64.min)...\(Int64.max))"))
        }
        return .integer(exact)
    }

    /// The `Swift.Encoder` handed to `encode(to:)`.
    final class Encoder: Swift.Encoder {
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }
        var node: Node?

        init(codingPath: [any CodingKey]) { self.codingPath = codingPath }

        /// What was encoded; a type that encoded nothing is an empty table.
        var finished: LuaValue { node?.finished ?? .table(LuaTable()) }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            let box: KeyedBox
            if case .keyed(let existing) = node {
                box = existing
            } else {
                precondition(
                    node == nil,
                    "\(describeCodingPath(codingPath)): asked for a keyed container after encoding something else")
                box = KeyedBox()
                node = .keyed(box)
            }
            return KeyedEncodingContainer(KeyedContainer<Key>(box: box, codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            let box: UnkeyedBox
            if case .unkeyed(let existing) = node {
                box = existing
            } else {
                precondition(
                    node == nil,
                    "\(describeCodingPath(codingPath)): asked for an unkeyed container after encoding something else")
                box = UnkeyedBox()
                node = .unkeyed(box)
            }
            return UnkeyedContainer(box: box, codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer { self }
    }

    struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let box: KeyedBox
        let codingPath: [any CodingKey]

        mutating func encodeNil(forKey key: Key) { box.members[key.stringValue] = .value(.nil) }

        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            box.members[key.stringValue] = .value(try LuaEncoding.encode(value, at: codingPath + [key]))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy keyType: NestedKey.Type, forKey key: Key
        ) -> KeyedEncodingContainer<NestedKey> {
            let nested = KeyedBox()
            box.members[key.stringValue] = .keyed(nested)
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested, codingPath: codingPath + [key]))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let nested = UnkeyedBox()
            box.members[key.stringValue] = .unkeyed(nested)
            return UnkeyedContainer(box: nested, codingPath: codingPath + [key])
        }

        mutating func superEncoder() -> any Swift.Encoder { superEncoder(named: LuaCodingKey(stringValue: "super")) }

        mutating func superEncoder(forKey key: Key) -> any Swift.Encoder { superEncoder(named: key) }

        private func superEncoder(named key: any CodingKey) -> any Swift.Encoder {
            let encoder = Encoder(codingPath: codingPath + [key])
            box.members[key.stringValue] = .encoder(encoder)
            return encoder
        }
    }

    struct UnkeyedContainer: UnkeyedEncodingContainer {
        let box: UnkeyedBox
        let codingPath: [any CodingKey]
        var count: Int { box.elements.count }

        private var nextKey: any CodingKey { LuaCodingKey(index: box.elements.count) }

        mutating func encodeNil() { box.elements.append(.value(.nil)) }

        mutating func encode<T: Encodable>(_ value: T) throws {
            box.elements.append(.value(try LuaEncoding.encode(value, at: codingPath + [nextKey])))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy keyType: NestedKey.Type
        ) -> KeyedEncodingContainer<NestedKey> {
            let nested = KeyedBox()
            let path = codingPath + [nextKey]
            box.elements.append(.keyed(nested))
            return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested, codingPath: path))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let nested = UnkeyedBox()
            let path = codingPath + [nextKey]
            box.elements.append(.unkeyed(nested))
            return UnkeyedContainer(box: nested, codingPath: path)
        }

        mutating func superEncoder() -> any Swift.Encoder {
            let encoder = Encoder(codingPath: codingPath + [nextKey])
            box.elements.append(.encoder(encoder))
            return encoder
        }
    }
}

extension LuaEncoding.Encoder: SingleValueEncodingContainer {
    private func set(_ value: LuaValue) {
        precondition(
            node == nil, "\(describeCodingPath(codingPath)): encoded a second value into a single-value container")
        node = .value(value)
    }

    func encodeNil() { set(.nil) }
    func encode(_ value: Bool) { set(.boolean(value)) }
    func encode(_ value: String) { set(.string(LuaString(value))) }
    func encode(_ value: Double) { set(.number(value)) }
    func encode(_ value: Float) { set(.number(Double(value))) }
    func encode(_ value: Int) throws { set(try LuaEncoding.integer(value, at: codingPath)) }
    func encode(_ value: Int8) throws { set(try LuaEncoding.integer(value, at: codingPath)) }
    func encode(_ value: Int16) throws { set(try LuaEncoding.integer(value, at: codingPath)) }
    func encode(_ value: Int32) throws { set(try LuaEncoding.integer(value, at: codingPath)) }
    func encode(_ value: Int64) throws { set(try LuaEncoding.integer(value, at: codingPath)) }
    func encode(_ value: UInt) throws { set(try LuaEncoding.integer(value, at: codingPath)) }
    func encode(_ value: UInt8) throws { set(try LuaEncoding.integer(value, at: codingPath)) }
    func encode(_ value: UInt16) throws { set(try LuaEncoding.integer(value, at: codingPath)) }
    func encode(_ value: UInt32) throws { set(try LuaEncoding.integer(value, at: codingPath)) }
    func encode(_ value: UInt64) throws { set(try LuaEncoding.integer(value, at: codingPath)) }
    func encode<T: Encodable>(_ value: T) throws { set(try LuaEncoding.encode(value, at: codingPath)) }
}

/// A coding key for sequence indices and `super`, shared by the encoder and decoder.
struct LuaCodingKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }

    init(intValue: Int) {
        self.stringValue = "\(intValue)"
        self.intValue = intValue
    }

    /// The key of the element at a 0-based position in a sequence.
    init(index: Int) {
        self.stringValue = "Index \(index)"
        self.intValue = index
    }
}

/// Renders a coding path as `items[0].title` for messages.
func describeCodingPath(_ codingPath: [any CodingKey]) -> String {
    var s = ""
    for key in codingPath {
        if let index = key.intValue, key.stringValue.hasPrefix("Index ") || key.stringValue == "\(index)" {
            s += "[\(index)]"
        } else {
            s += s.isEmpty ? key.stringValue : "." + key.stringValue
        }
    }
    return s.isEmpty ? "(top level)" : s
}
