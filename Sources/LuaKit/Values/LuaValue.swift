/// A Lua value copied into Swift: immutable, `Sendable`, safe to keep after the
/// state that produced it has closed.
///
///     let state: LuaValue = ["query": "a", "items": [1, 2, 3], "loading": false]
///     state["items"]?[1]   // .integer(2)
///
/// Integers and floats stay distinct (`.integer(1) != .number(1.0)`), as in
/// Lua 5.4 ([manual §2.1](https://www.lua.org/manual/5.4/manual.html#2.1)).
/// Strings are bytes and need not be UTF-8.
public enum LuaValue: Sendable, Hashable {
    case `nil`
    case boolean(Bool)
    case integer(Int64)
    case number(Double)
    case string(LuaString)
    case table(LuaTable)

    /// The Lua type name (`"nil"`, `"boolean"`, `"number"`, `"string"`, `"table"`).
    public var typeName: String {
        switch self {
        case .nil: "nil"
        case .boolean: "boolean"
        case .integer, .number: "number"
        case .string: "string"
        case .table: "table"
        }
    }

    public var isNil: Bool { if case .nil = self { true } else { false } }

    /// The string, decoded as UTF-8 (invalid bytes are repaired), or nil.
    public var stringValue: String? { if case .string(let s) = self { s.description } else { nil } }
    public var intValue: Int64? { if case .integer(let i) = self { i } else { nil } }
    /// A number of either kind as a Double.
    public var doubleValue: Double? {
        switch self {
        case .integer(let i): Double(i)
        case .number(let d): d
        default: nil
        }
    }
    public var boolValue: Bool? { if case .boolean(let b) = self { b } else { nil } }
    public var tableValue: LuaTable? { if case .table(let t) = self { t } else { nil } }

    /// Lua truthiness: everything but nil and false.
    public var isTruthy: Bool {
        switch self {
        case .nil, .boolean(false): false
        default: true
        }
    }

    /// Field access on a table (`nil` for anything else or a missing key).
    /// Setting a field of a table stores it (nil removes it); setting a field of
    /// anything else does nothing.
    ///
    ///     var state: LuaValue = ["count": 1]
    ///     state["count"] = 2
    public subscript(key: String) -> LuaValue? {
        get {
            guard case .table(let t) = self else { return nil }
            let v = t[key]
            if v.isNil { return Optional.none }
            return v
        }
        set {
            guard case .table(var t) = self else { return }
            t[.string(LuaString(key))] = newValue ?? .nil
            self = .table(t)
        }
    }

    /// Array access (0-based, like Swift) on a table's sequence part.
    public subscript(index: Int) -> LuaValue? {
        guard case .table(let t) = self, index >= 0, index < t.array.count else { return nil }
        return t.array[index]
    }
}

/// A Lua string: a sequence of bytes, usually but not necessarily UTF-8.
public struct LuaString: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral, Comparable {
    public var bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }
    public init(_ string: String) { self.bytes = Array(string.utf8) }
    public init(stringLiteral value: String) { self.init(value) }

    /// The bytes decoded as UTF-8; invalid sequences become U+FFFD.
    public var description: String { String(decoding: bytes, as: UTF8.self) }
    /// True when the bytes are valid UTF-8.
    public var isValidUTF8: Bool { String(validating: bytes, as: UTF8.self) != nil }

    public static func < (a: LuaString, b: LuaString) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }

    /// Hashes the bytes as one block (the synthesized form would feed them one by one).
    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }

    public static func == (a: LuaString, b: LuaString) -> Bool { a.bytes == b.bytes }
}

/// A Lua table: its sequence part (keys 1...n, stored 0-based) and every other key.
///
/// `isJSONArray` remembers that an empty table came from a JSON array, so it
/// encodes back as `[]` rather than `{}`.
public struct LuaTable: Sendable, Hashable {
    /// Equal when the entries are; `isJSONArray` counts only for empty tables.
    public static func == (a: LuaTable, b: LuaTable) -> Bool {
        a.array == b.array && a.hash == b.hash && (!a.isEmpty || a.isJSONArray == b.isJSONArray)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(array)
        hasher.combine(hash)
        if isEmpty { hasher.combine(isJSONArray) }
    }

    public var array: [LuaValue]
    public var hash: [LuaValue: LuaValue]
    public var isJSONArray: Bool

    public init(array: [LuaValue] = [], hash: [LuaValue: LuaValue] = [:], isJSONArray: Bool = false) {
        self.array = array
        self.hash = hash
        self.isJSONArray = isJSONArray
    }

    public var isEmpty: Bool { array.isEmpty && hash.isEmpty }
    /// Number of entries (sequence and hash parts).
    public var count: Int { array.count + hash.count }

    /// Lua-style lookup: integer keys 1...n hit the sequence part.
    public subscript(key: LuaValue) -> LuaValue {
        get {
            if case .integer(let i) = key, i >= 1, i <= Int64(array.count) { return array[Int(i - 1)] }
            return hash[key] ?? .nil
        }
        set {
            let key = LuaTable.normalize(key)
            if case .integer(let i) = key, i >= 1, i <= Int64(array.count) {
                if newValue.isNil {
                    // Moving the tail out keeps `array` a proper sequence.
                    let tail = array[Int(i)...]
                    for (offset, v) in tail.enumerated() { hash[.integer(i + 1 + Int64(offset))] = v }
                    array.removeSubrange(Int(i - 1)...)
                } else {
                    array[Int(i - 1)] = newValue
                }
                return
            }
            if newValue.isNil { hash[key] = nil; return }
            if case .integer(let i) = key, i == Int64(array.count) + 1 {
                array.append(newValue)
                hash[key] = nil
                while let next = hash.removeValue(forKey: .integer(Int64(array.count) + 1)) { array.append(next) }
                return
            }
            hash[key] = newValue
        }
    }

    public subscript(key: String) -> LuaValue {
        get {
            // A small table is searched by comparing bytes: a `LuaString` key would cost an
            // allocation per read (view models read fields by name on every state).
            if hash.count <= LuaTable.scannedFieldCount, let found = scan(for: key) { return found }
            return self[.string(LuaString(key))]
        }
        set { self[.string(LuaString(key))] = newValue }
    }

    /// Up to this many entries in `hash`, `self[String]` compares bytes instead of hashing.
    static let scannedFieldCount = 8

    /// The value at the string key `key` in a small `hash` (`.nil` when absent), or nil
    /// when `key` has no contiguous UTF-8 (the caller then looks it up as usual).
    private func scan(for key: String) -> LuaValue? {
        key.utf8.withContiguousStorageIfAvailable { wanted -> LuaValue in
            for (k, v) in hash {
                guard case .string(let s) = k, s.bytes.count == wanted.count else { continue }
                if s.bytes.withUnsafeBufferPointer({ $0.elementsEqual(wanted) }) { return v }
            }
            return .nil
        }
    }

    /// Every entry, sequence part first, then the rest sorted for a stable order.
    public var entries: [(key: LuaValue, value: LuaValue)] {
        var out: [(key: LuaValue, value: LuaValue)] = array.enumerated().map {
            (.integer(Int64($0.offset + 1)), $0.element)
        }
        out += hash.sorted { LuaValue.keyOrder($0.key, $1.key) }.map { ($0.key, $0.value) }
        return out
    }

    /// Float keys with an integral value become integers, as Lua does.
    static func normalize(_ key: LuaValue) -> LuaValue {
        if case .number(let d) = key, let i = Int64(exactly: d) { return .integer(i) }
        return key
    }
}

extension LuaValue {
    /// A total order on keys for stable output: numbers, then strings, then the rest.
    package static func keyOrder(_ a: LuaValue, _ b: LuaValue) -> Bool {
        func rank(_ v: LuaValue) -> Int {
            switch v {
            case .integer, .number: 0
            case .string: 1
            case .boolean: 2
            default: 3
            }
        }
        let (ra, rb) = (rank(a), rank(b))
        if ra != rb { return ra < rb }
        switch (a, b) {
        case (.integer(let x), .integer(let y)): return x < y  // exact beyond 2^53, where doubles tie
        case (.string(let x), .string(let y)): return x < y
        case (.boolean(let x), .boolean(let y)): return !x && y
        default:
            if let x = a.doubleValue, let y = b.doubleValue {
                if x != y { return x < y }
                if case .integer = a, case .number = b { return true }
            }
            return false
        }
    }
}

// MARK: - Literals

extension LuaValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .nil }
    public init(booleanLiteral value: Bool) { self = .boolean(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(stringLiteral value: String) { self = .string(LuaString(value)) }
    public init(arrayLiteral elements: LuaValue...) { self = .table(LuaTable(array: elements, isJSONArray: true)) }
    public init(dictionaryLiteral elements: (String, LuaValue)...) {
        var t = LuaTable()
        for (k, v) in elements { t[k] = v }
        self = .table(t)
    }
}

// MARK: - From Swift values

/// Values from Swift variables, without ceremony:
///
///     let sku = "A-1", quantity = 3
///     try cart.send(["type": "add", "sku": "\(sku)", "quantity": LuaValue(quantity)])
///     try cart.send(["type": "add", "sku": .init(sku), "price": .init(9.5)])
extension LuaValue: ExpressibleByStringInterpolation {
    public init(_ string: String) { self = .string(LuaString(string)) }
    public init(_ bool: Bool) { self = .boolean(bool) }
    public init<I: BinaryInteger>(_ integer: I) { self = .integer(Int64(integer)) }
    public init(_ number: Double) { self = .number(number) }
    /// A list (a JSON array, even when empty).
    public init(_ values: [LuaValue]) { self = .table(LuaTable(array: values, isJSONArray: true)) }
    /// A table with string keys.
    public init(_ fields: [String: LuaValue]) {
        var t = LuaTable()
        for (k, v) in fields { t[k] = v }
        self = .table(t)
    }
    /// `nil` becomes `.nil`.
    public init<W>(_ optional: W?) where W: LuaValueConvertible { self = optional?.luaValue ?? .nil }
}

/// A Swift value with a `LuaValue` form (strings, integers, floats, booleans).
public protocol LuaValueConvertible { var luaValue: LuaValue { get } }
extension String: LuaValueConvertible { public var luaValue: LuaValue { LuaValue(self) } }
extension Int: LuaValueConvertible { public var luaValue: LuaValue { LuaValue(self) } }
extension Int64: LuaValueConvertible { public var luaValue: LuaValue { LuaValue(self) } }
extension Double: LuaValueConvertible { public var luaValue: LuaValue { LuaValue(self) } }
extension Bool: LuaValueConvertible { public var luaValue: LuaValue { LuaValue(self) } }

extension LuaValue: CustomStringConvertible {
    /// A Lua-constructor-like rendering, stable across runs (keys sorted).
    public var description: String {
        switch self {
        case .nil: return "nil"
        case .boolean(let b): return b ? "true" : "false"
        case .integer(let i): return String(i)
        case .number(let d): return LuaValue.formatNumber(d)
        case .string(let s): return "\"" + LuaValue.escaped(s.description, quote: true) + "\""
        case .table(let t):
            if t.isEmpty { return "{}" }
            var parts: [String] = t.array.map(\.description)
            for (k, v) in t.hash.sorted(by: { LuaValue.keyOrder($0.key, $1.key) }) {
                if case .string(let s) = k, LuaValue.isIdentifier(s.description) {
                    parts.append("\(s) = \(v)")
                } else {
                    parts.append("[\(k)] = \(v)")
                }
            }
            return "{ " + parts.joined(separator: ", ") + " }"
        }
    }

    /// `text` with control characters written as Lua escapes (`\n`, `\t`, `\027`), so
    /// data printed for people cannot move the cursor or clear the screen; with `quote`,
    /// `"` and `\` are escaped too (inside a quoted string).
    ///
    /// The one escaping of text from outside (a plugin's names, file names, messages) before
    /// a terminal: C0 controls and DEL as `\027` (`\n`, `\t`, `\r`), C1 controls (which some
    /// terminals take as ESC sequences: U+009B is CSI) as `\u{9B}`, both as Lua reads them.
    package static func escaped(_ text: String, quote: Bool = false) -> String {
        guard text.unicodeScalars.contains(where: { isControl($0) || (quote && ($0 == "\"" || $0 == "\\")) }) else {
            return text
        }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            case "\"" where quote: out += "\\\""
            case "\\" where quote: out += "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: out += "\\" + String(format: "%03d", scalar.value)
            case _ where isControl(scalar): out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// `escaped` for a message of several lines: its line breaks and tabs kept, every other
    /// control character escaped.
    package static func visible(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { isControl($0) && $0 != "\n" && $0 != "\t" }) else { return text }
        return text.split(separator: "\n", omittingEmptySubsequences: false)
            .map {
                $0.split(separator: "\t", omittingEmptySubsequences: false).map { escaped(String($0)) }.joined(
                    separator: "\t")
            }
            .joined(separator: "\n")
    }

    /// Formats a float as Lua's `%.14g` does, keeping a `.0` on integral values.
    package static func formatNumber(_ d: Double) -> String {
        if d.isNaN { return d.sign == .minus ? "-nan" : "nan" }
        if d.isInfinite { return d < 0 ? "-inf" : "inf" }
        var s = String(format: "%.14g", d)
        if !s.contains(".") && !s.contains("e") && !s.contains("n") && !s.contains("i") { s += ".0" }
        return s
    }

    /// Whether `s` can be written as a bare Lua field name.
    package static func isIdentifierPublic(_ s: String) -> Bool { isIdentifier(s) }

    static func isIdentifier(_ s: String) -> Bool {
        guard let first = s.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic)
        else { return false }
        return s.unicodeScalars.allSatisfy {
            $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)))
        }
    }
}

import Foundation
