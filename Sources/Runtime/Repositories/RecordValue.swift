import Foundation

/// A plain, `Sendable` field value: what a `Query` compares and what a `Record` holds.
///
///     let record = Record(id: "1", fields: ["name": "Ada", "age": 36, "admin": true])
///     record["age"] == .int(36)
///
/// Values order null < bool < number < string < array < object; `int` and `double` compare as numbers.
public enum RecordValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([RecordValue])
    case object([String: RecordValue])
}

extension RecordValue: Comparable {
    private var rank: Int {
        switch self {
        case .null: 0
        case .bool: 1
        case .int, .double: 2
        case .string: 3
        case .array: 4
        case .object: 5
        }
    }

    public static func < (lhs: RecordValue, rhs: RecordValue) -> Bool {
        switch (lhs, rhs) {
        case let (.bool(a), .bool(b)): return !a && b
        case let (.int(a), .int(b)): return a < b
        case let (.int(a), .double(b)): return Double(a) < b
        case let (.double(a), .int(b)): return a < Double(b)
        case let (.double(a), .double(b)): return a < b
        case let (.string(a), .string(b)): return a < b
        case let (.array(a), .array(b)): return a.lexicographicallyPrecedes(b)
        case let (.object(a), .object(b)): return a.count < b.count
        default: return lhs.rank < rhs.rank
        }
    }
}

extension RecordValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([RecordValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: RecordValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// Converts any `Encodable` value into a `RecordValue` tree (through JSON).
    ///
    ///     let value = try RecordValue(encoding: User(id: 1, name: "Ada"))   // .object([...])
    ///
    /// - Parameter value: The value to convert.
    /// - Throws: `EncodingError` when `value` cannot be encoded.
    public init(encoding value: some Encodable) throws {
        let data = try JSONEncoder().encode(value)
        self = try JSONDecoder().decode(RecordValue.self, from: data)
    }
}

extension RecordValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: RecordValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, RecordValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
