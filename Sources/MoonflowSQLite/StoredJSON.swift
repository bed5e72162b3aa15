import Foundation
import Runtime

/// The JSON text a row's `fields` column holds, written and read exactly: integers stay integers
/// (2^53 + 1 included), floats stay floats (`2.0` is written `2.0`, so SQLite's `json_type` says
/// `real`), object keys are sorted so equal records are equal text.
///
///     let text = try StoredJSON.text(of: ["age": 36, "score": 2.0])   // {"age":36,"score":2.0}
///     let fields = try StoredJSON.object(from: text)
///
/// Foundation's JSON coders are not used: they write `2.0` as `2` and read it back as an integer.
/// Nor is LuaKit's codec: it reads and writes `LuaValue`s, whose tables carry what only Lua has
/// (integer keys, the list/object markers), and a Swift model stored here has no Lua state at
/// all; going through `LuaValue` would copy every row twice. This is the file format of the
/// `fields` column, so it stays a codec of `RecordValue` alone.
enum StoredJSON {
    /// A value JSON cannot hold (an infinite number); `path` names where it is (`score`, `tags[2]`).
    struct Unstorable: Error {
        let path: String
        let value: Double
    }

    /// Text that is not the JSON this type writes; `offset` is the byte where reading stopped.
    struct Malformed: Error {
        let offset: Int
        let why: String
    }

    // MARK: - Writing

    /// `fields` as one JSON object.
    ///
    /// - Throws: `Unstorable` for an infinite number.
    static func text(of fields: [String: RecordValue]) throws -> String {
        var out = ""
        try write(.object(fields), path: "", into: &out)
        return out
    }

    /// `value` as JSON text.
    ///
    /// - Throws: `Unstorable` for an infinite number.
    static func text(of value: RecordValue) throws -> String {
        var out = ""
        try write(value, path: "", into: &out)
        return out
    }

    private static func write(_ value: RecordValue, path: String, into out: inout String) throws {
        switch value {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d):
            guard d.isFinite else { throw Unstorable(path: path, value: d) }
            // Swift's shortest round-trip form always has a `.` or an exponent, so it reads back as a float.
            out += "\(d)"
        case .string(let s): writeString(s, into: &out)
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                try write(item, path: "\(path)[\(i + 1)]", into: &out)
            }
            out += "]"
        case .object(let fields):
            out += "{"
            for (i, key) in fields.keys.sorted().enumerated() {
                if i > 0 { out += "," }
                writeString(key, into: &out)
                out += ":"
                try write(fields[key]!, path: path.isEmpty ? key : "\(path).\(key)", into: &out)
            }
            out += "}"
        }
    }

    private static func writeString(_ s: String, into out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    // MARK: - Reading

    /// The JSON object `text` as fields.
    ///
    /// - Throws: `Malformed` when `text` is not one JSON object.
    static func object(from text: String) throws -> [String: RecordValue] {
        guard case .object(let fields) = try value(from: text) else {
            throw Malformed(offset: 0, why: "the row's fields are not a JSON object")
        }
        return fields
    }

    /// The JSON value `text` holds.
    ///
    /// - Throws: `Malformed` when `text` is not one JSON value.
    static func value(from text: String) throws -> RecordValue {
        var text = text
        return try text.withUTF8 { bytes in
            var reader = Reader(bytes: bytes)
            let value = try reader.value(depth: 0)
            reader.skipSpace()
            guard reader.index == bytes.count else { throw reader.malformed("text after the value") }
            return value
        }
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        func malformed(_ why: String) -> Malformed { Malformed(offset: index, why: why) }

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func expect(_ literal: StaticString) throws {
            let count = literal.utf8CodeUnitCount
            guard index + count <= bytes.count,
                memcmp(bytes.baseAddress! + index, literal.utf8Start, count) == 0
            else {
                throw malformed("expected \(literal)")
            }
            index += count
        }

        mutating func value(depth: Int) throws -> RecordValue {
            guard depth < 512 else { throw malformed("nested more than 512 deep") }
            skipSpace()
            guard index < bytes.count else { throw malformed("unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: "n"): try expect("null"); return .null
            case UInt8(ascii: "t"): try expect("true"); return .bool(true)
            case UInt8(ascii: "f"): try expect("false"); return .bool(false)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "["):
                index += 1
                var items: [RecordValue] = []
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
                while true {
                    items.append(try value(depth: depth + 1))
                    skipSpace()
                    guard index < bytes.count else { throw malformed("unterminated array") }
                    if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
                    guard bytes[index] == UInt8(ascii: ",") else { throw malformed("expected , or ]") }
                    index += 1
                }
            case UInt8(ascii: "{"):
                index += 1
                var fields: [String: RecordValue] = [:]
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(fields) }
                while true {
                    skipSpace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                        throw malformed("expected a key")
                    }
                    let key = try string()
                    skipSpace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw malformed("expected :") }
                    index += 1
                    fields[key] = try value(depth: depth + 1)
                    skipSpace()
                    guard index < bytes.count else { throw malformed("unterminated object") }
                    if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(fields) }
                    guard bytes[index] == UInt8(ascii: ",") else { throw malformed("expected , or }") }
                    index += 1
                }
            default:
                return try number()
            }
        }

        /// A number: an integer when it has no fraction or exponent and fits 64 bits, else a float.
        mutating func number() throws -> RecordValue {
            let start = index
            var isFloat = false
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"): break
                case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): isFloat = true
                default:
                    if index == start { throw malformed("unexpected character") }
                    return try finishNumber(start, isFloat)
                }
                index += 1
            }
            return try finishNumber(start, isFloat)
        }

        private func finishNumber(_ start: Int, _ isFloat: Bool) throws -> RecordValue {
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            if !isFloat, let i = Int(text) { return .int(i) }
            guard let d = Double(text) else { throw Malformed(offset: start, why: "bad number \(text)") }
            return .double(d)
        }

        mutating func string() throws -> String {
            index += 1  // the opening quote
            var scalars = String.UnicodeScalarView()
            var runStart = index
            func flushRun(_ end: Int) {
                if end > runStart {
                    scalars.append(
                        contentsOf: String(
                            decoding: UnsafeBufferPointer(rebasing: bytes[runStart..<end]), as: UTF8.self
                        ).unicodeScalars)
                }
            }
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    flushRun(index)
                    index += 1
                    return String(scalars)
                }
                guard byte == UInt8(ascii: "\\") else { index += 1; continue }
                flushRun(index)
                index += 1
                guard index < bytes.count else { break }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code), index + 1 < bytes.count,
                        bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                    {
                        index += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw malformed("bad surrogate pair") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw malformed("bad \\u escape") }
                    scalars.append(scalar)
                default: throw malformed("bad escape")
                }
                runStart = index
            }
            throw malformed("unterminated string")
        }

        mutating func hex4() throws -> UInt32 {
            guard index + 4 <= bytes.count else { throw malformed("short \\u escape") }
            var code: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw malformed("bad hex digit")
                }
                code = code << 4 | UInt32(digit)
                index += 1
            }
            return code
        }
    }
}
