/// Malformed JSON text: where the problem is and what was expected there.
///
///     do { _ = try LuaValue(json: #"{"a": 1 "b": 2}"#) }
///     catch let error as JSONError { print(error) }
///     // line 1, column 9: expected ',' or '}' after an object member, found '"'
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The 1-based line of the problem.
    public let line: Int
    /// The 1-based column of the problem, counted in Unicode scalars.
    public let column: Int
    /// The 0-based byte offset of the problem in the input.
    public let offset: Int
    /// What was expected and what was found instead.
    public let message: String

    /// Creates an error at a place in the input.
    ///
    ///     JSONError(line: 1, column: 9, offset: 8, message: "expected ',' or '}' after an object member")
    ///
    /// - Parameters:
    ///   - line: the 1-based line.
    ///   - column: the 1-based column in Unicode scalars.
    ///   - offset: the 0-based byte offset.
    ///   - message: what was expected and what was found.
    public init(line: Int, column: Int, offset: Int, message: String) {
        self.line = line
        self.column = column
        self.offset = offset
        self.message = message
    }

    /// `line L, column C: message`, ready for a user to read.
    public var description: String { "line \(line), column \(column): \(message)" }
}

extension LuaValue {
    /// Parses JSON text into a Lua value, keeping integers exact.
    ///
    ///     let v = try LuaValue(json: #"{"id": 9007199254740993, "tags": []}"#)
    ///     v["id"]      // .integer(9007199254740993)
    ///
    /// Numbers without a fraction or exponent become `.integer` when they fit
    /// in `Int64`, other numbers `.number`. Arrays become sequences with
    /// `isJSONArray` set; a `null` element leaves a hole, so later elements
    /// land in the hash part under their integer index. Objects become tables
    /// with string keys; `null` members are absent. Nesting is limited to
    /// `LuaState.maxDepth` (200) levels.
    ///
    /// - Parameter json: the JSON text (one value, optionally surrounded by whitespace).
    /// - Throws: `JSONError` with the line and column of the first problem.
    public init(json: String) throws {
        var text = json
        self = try text.withUTF8 { try JSONReader.parse($0) }
    }

    /// Parses JSON from UTF-8 bytes into a Lua value, keeping integers exact.
    ///
    ///     let v = try LuaValue(jsonBytes: Array(#"[1, 2.5, "x"]"#.utf8))
    ///     v[1]         // .number(2.5)
    ///
    /// Bytes inside strings are copied as they are (Lua strings are bytes), so
    /// invalid UTF-8 there survives; a leading byte-order mark is skipped.
    ///
    /// - Parameter jsonBytes: the JSON text as UTF-8.
    /// - Throws: `JSONError` with the line and column of the first problem.
    public init(jsonBytes: some Collection<UInt8>) throws {
        if let parsed = try jsonBytes.withContiguousStorageIfAvailable({ try JSONReader.parse($0) }) {
            self = parsed
        } else {
            self = try Array(jsonBytes).withUnsafeBufferPointer { try JSONReader.parse($0) }
        }
    }

    /// Encodes the value as compact JSON text.
    ///
    ///     let v: LuaValue = ["items": [1, 2.0], "empty": [], "none": .table(LuaTable())]
    ///     try v.json()   // {"empty":[],"items":[1,2.0],"none":{}}
    ///
    /// A table whose keys are exactly 1...n becomes an array; an empty table
    /// becomes `{}` unless it came from a JSON array; any other table becomes
    /// an object whose integer and float keys are written as strings (`"3"`).
    /// Floats always show they are floats (`2.0`, `1e+300`); invalid UTF-8 in
    /// strings becomes U+FFFD.
    ///
    /// - Parameters:
    ///   - sortedKeys: sort object keys (numbers numerically, then strings
    ///     byte-wise) for stable output; otherwise the order is unspecified.
    ///   - root: how to name this value in error paths (`state` gives `state.items[3].x`).
    /// - Returns: the JSON text.
    /// - Throws: `LuaError.conversion` naming the path of a NaN or infinite
    ///   number, a boolean key, or nesting deeper than `LuaState.maxDepth`.
    public func json(sortedKeys: Bool = true, root: String = "value") throws -> String {
        String(decoding: try jsonBytes(sortedKeys: sortedKeys, root: root), as: UTF8.self)
    }

    /// Encodes the value as compact JSON in UTF-8 bytes, ready to write out.
    ///
    ///     FileHandle.standardOutput.write(Data(try event.jsonBytes() + [0x0A]))
    ///
    /// - Parameters:
    ///   - sortedKeys: sort object keys for stable output (see `json(sortedKeys:root:)`).
    ///   - root: how to name this value in error paths.
    /// - Returns: the JSON text as UTF-8.
    /// - Throws: `LuaError.conversion` as `json(sortedKeys:root:)` does.
    public func jsonBytes(sortedKeys: Bool = true, root: String = "value") throws -> [UInt8] {
        var writer = JSONWriter(sortedKeys: sortedKeys, root: root)
        try writer.write(self, depth: 0)
        return writer.out
    }
}

// MARK: - Reading

/// A recursive-descent JSON parser over a UTF-8 buffer.
private struct JSONReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var i = 0

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONError) -> LuaValue {
        var reader = JSONReader(bytes: bytes)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { reader.i = 3 }
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.i == bytes.count else {
            throw reader.fail("expected end of input after the JSON value, found \(reader.found())")
        }
        return value
    }

    private var peek: UInt8? { i < bytes.count ? bytes[i] : nil }

    private mutating func skipSpace() {
        while i < bytes.count {
            switch bytes[i] {
            case 0x20, 0x0A, 0x0D, 0x09: i += 1
            default: return
            }
        }
    }

    private mutating func value(depth: Int) throws(JSONError) -> LuaValue {
        skipSpace()
        guard let c = peek else { throw fail("expected a JSON value, found end of input") }
        switch c {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(LuaString(bytes: try string()))
        case UInt8(ascii: "t"): try literal("true"); return .boolean(true)
        case UInt8(ascii: "f"): try literal("false"); return .boolean(false)
        case UInt8(ascii: "n"): try literal("null"); return .nil
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default:
            throw fail("expected a JSON value (object, array, string, number, true, false or null), found \(found())")
        }
    }

    private mutating func enter(depth: Int) throws(JSONError) {
        guard depth <= LuaState.maxDepth else {
            throw fail("expected at most \(LuaState.maxDepth) levels of nested arrays and objects")
        }
        i += 1
    }

    private mutating func object(depth: Int) throws(JSONError) -> LuaValue {
        try enter(depth: depth)
        var table = LuaTable()
        skipSpace()
        if peek == UInt8(ascii: "}") { i += 1; return .table(table) }
        var afterComma = false
        while true {
            skipSpace()
            guard peek == UInt8(ascii: "\"") else {
                throw fail(afterComma ? "expected a string key after ',' in an object, found \(found())"
                                      : "expected a string key or '}', found \(found())")
            }
            let key = LuaValue.string(LuaString(bytes: try string()))
            skipSpace()
            guard peek == UInt8(ascii: ":") else { throw fail("expected ':' after an object key, found \(found())") }
            i += 1
            let member = try value(depth: depth)
            // Careful: `nil` here would be `LuaValue.nil`, which is a value.
            if member.isNil { table.hash.removeValue(forKey: key) } else { table.hash[key] = member }
            skipSpace()
            switch peek {
            case UInt8(ascii: ","): i += 1; afterComma = true
            case UInt8(ascii: "}"): i += 1; return .table(table)
            default: throw fail("expected ',' or '}' after an object member, found \(found())")
            }
        }
    }

    private mutating func array(depth: Int) throws(JSONError) -> LuaValue {
        try enter(depth: depth)
        var table = LuaTable(isJSONArray: true)
        skipSpace()
        if peek == UInt8(ascii: "]") { i += 1; return .table(table) }
        var index: Int64 = 0
        var hole = false
        while true {
            let element = try value(depth: depth)
            index += 1
            if element.isNil {
                hole = true
            } else if hole {
                table[.integer(index)] = element
            } else {
                table.array.append(element)
            }
            skipSpace()
            switch peek {
            case UInt8(ascii: ","): i += 1
            case UInt8(ascii: "]"): i += 1; return .table(table)
            default: throw fail("expected ',' or ']' after an array element, found \(found())")
            }
        }
    }

    private mutating func literal(_ word: StaticString) throws(JSONError) {
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        for b in expected {
            guard peek == b else { throw fail("expected '\(word)', found \(found())") }
            i += 1
        }
    }

    // MARK: Numbers

    private func isDigit(_ j: Int) -> Bool {
        j < bytes.count && bytes[j] &- UInt8(ascii: "0") < 10
    }

    private mutating func skipDigits() { while isDigit(i) { i += 1 } }

    private mutating func number() throws(JSONError) -> LuaValue {
        let start = i
        if peek == UInt8(ascii: "-") { i += 1 }
        let digitsStart = i
        guard isDigit(i) else { throw fail("expected a digit after '-', found \(found())") }
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
            if isDigit(i) { throw fail("expected '.', 'e' or the end of the number after a leading 0 (leading zeros are not allowed)") }
        } else {
            skipDigits()
        }
        let digitsEnd = i
        var isFloat = false
        if peek == UInt8(ascii: ".") {
            isFloat = true
            i += 1
            guard isDigit(i) else { throw fail("expected a digit after '.', found \(found())") }
            skipDigits()
        }
        if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
            isFloat = true
            i += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { i += 1 }
            guard isDigit(i) else { throw fail("expected a digit in the exponent, found \(found())") }
            skipDigits()
        }
        if !isFloat, let exact = integer(digitsStart..<digitsEnd, negative: digitsStart != start) {
            return .integer(exact)
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        guard let d = Double(text), d.isFinite else {
            throw fail("expected a number within the range of a double, found \(text)", at: start)
        }
        return .number(d)
    }

    /// The digits as an Int64, or nil when they do not fit.
    private func integer(_ digits: Range<Int>, negative: Bool) -> Int64? {
        // Accumulate negatively: Int64.min has no positive counterpart.
        var v: Int64 = 0
        for j in digits {
            let (times10, o1) = v.multipliedReportingOverflow(by: 10)
            let (next, o2) = times10.subtractingReportingOverflow(Int64(bytes[j] &- UInt8(ascii: "0")))
            if o1 || o2 { return nil }
            v = next
        }
        if negative { return v }
        return v == .min ? nil : -v
    }

    // MARK: Strings

    /// Reads a string starting at its opening quote; returns its bytes.
    private mutating func string() throws(JSONError) -> [UInt8] {
        i += 1
        let start = i
        // Fast path: no escapes.
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                defer { i += 1 }
                return Array(bytes[start..<i])
            }
            if b == UInt8(ascii: "\\") || b < 0x20 { break }
            i += 1
        }
        var out = Array(bytes[start..<i])
        while true {
            guard let b = peek else { throw fail("expected '\"' to close the string, found end of input") }
            switch b {
            case UInt8(ascii: "\""):
                i += 1
                return out
            case UInt8(ascii: "\\"):
                try escape(into: &out)
            case 0..<0x20:
                throw fail("expected a control character in a string to be escaped (\\n, \\t, \\u00XX), found \(found())")
            default:
                out.append(b)
                i += 1
            }
        }
    }

    private mutating func escape(into out: inout [UInt8]) throws(JSONError) {
        i += 1
        guard let c = peek else { throw fail("expected an escape sequence after '\\', found end of input") }
        let simple: UInt8? = switch c {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): c
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "n"): 0x0A
        case UInt8(ascii: "r"): 0x0D
        case UInt8(ascii: "t"): 0x09
        default: nil
        }
        if let simple {
            out.append(simple)
            i += 1
            return
        }
        guard c == UInt8(ascii: "u") else {
            throw fail(#"expected an escape sequence (\" \\ \/ \b \f \n \r \t or \uXXXX) after '\', found "# + found())
        }
        let escapeStart = i - 1
        i += 1
        var scalar = UInt32(try hex4())
        if (0xD800...0xDBFF).contains(scalar) {
            guard peek == UInt8(ascii: "\\"), i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "u") else {
                throw fail("expected a low surrogate (\\uDC00-\\uDFFF) after the high surrogate \\u\(hexString(scalar))")
            }
            i += 2
            let low = UInt32(try hex4())
            guard (0xDC00...0xDFFF).contains(low) else {
                throw fail("expected a low surrogate (\\uDC00-\\uDFFF) after the high surrogate \\u\(hexString(scalar)), found \\u\(hexString(low))", at: i - 6)
            }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw fail("expected a high surrogate (\\uD800-\\uDBFF) before the low surrogate \\u\(hexString(scalar))", at: escapeStart)
        }
        out.append(contentsOf: UTF8.encode(Unicode.Scalar(scalar)!)!)
    }

    private mutating func hex4() throws(JSONError) -> UInt16 {
        var v: UInt16 = 0
        for _ in 0..<4 {
            let digit: UInt8? = switch peek {
            case .some(let b) where b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9"): b - UInt8(ascii: "0")
            case .some(let b) where b >= UInt8(ascii: "a") && b <= UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
            case .some(let b) where b >= UInt8(ascii: "A") && b <= UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
            default: nil
            }
            guard let digit else { throw fail("expected 4 hex digits after \\u, found \(found())") }
            v = v << 4 | UInt16(digit)
            i += 1
        }
        return v
    }

    private func hexString(_ v: UInt32, width: Int = 4) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }

    // MARK: Errors

    /// Describes the input at the current position for an error message.
    private func found() -> String {
        guard i < bytes.count else { return "end of input" }
        let b = bytes[i]
        switch b {
        case 0x20..<0x7F: return "'\(Character(Unicode.Scalar(b)))'"
        case 0..<0x20, 0x7F: return "a control character (0x\(hexString(UInt32(b), width: 2)))"
        default:
            let tail = bytes[i..<min(i + 4, bytes.count)]
            guard let scalar = String(decoding: tail, as: UTF8.self).unicodeScalars.first, scalar != "\u{FFFD}" else {
                return "the invalid UTF-8 byte 0x\(String(b, radix: 16, uppercase: true))"
            }
            return "'\(scalar)'"
        }
    }

    /// An error at `offset` (by default the current position), with its line and column.
    private func fail(_ message: String, at offset: Int? = nil) -> JSONError {
        let end = min(offset ?? i, bytes.count)
        var line = 1
        var lineStart = 0
        for j in 0..<end where bytes[j] == 0x0A {
            line += 1
            lineStart = j + 1
        }
        // Count scalars, not bytes: skip UTF-8 continuation bytes.
        let column = 1 + bytes[lineStart..<end].lazy.filter { $0 & 0xC0 != 0x80 }.count
        return JSONError(line: line, column: column, offset: end, message: message)
    }
}

// MARK: - Writing

/// Writes compact JSON into a byte buffer.
private struct JSONWriter {
    var out: [UInt8] = []
    let sortedKeys: Bool
    let root: String
    /// The keys from the root to the value being written, for error paths.
    var keys: [LuaValue] = []

    init(sortedKeys: Bool, root: String) {
        self.sortedKeys = sortedKeys
        self.root = root
        out.reserveCapacity(256)
    }

    private func conversionError(_ reason: String) -> LuaError {
        LuaError.conversion(path: LuaState.Path(root: root, parts: keys).description, reason: reason)
    }

    mutating func write(_ value: LuaValue, depth: Int) throws(LuaError) {
        switch value {
        case .nil: append("null")
        case .boolean(let b): append(b ? "true" : "false")
        case .integer(let n): appendInteger(n)
        case .number(let d): try appendFloat(d)
        case .string(let s): appendString(s.bytes)
        case .table(let t):
            guard depth < LuaState.maxDepth else {
                throw conversionError("nested deeper than \(LuaState.maxDepth) levels")
            }
            if t.hash.isEmpty {
                if t.array.isEmpty {
                    append(t.isJSONArray ? "[]" : "{}")
                } else {
                    try writeArray(t.array, depth: depth)
                }
            } else {
                try writeObject(t, depth: depth)
            }
        }
    }

    private mutating func writeArray(_ array: [LuaValue], depth: Int) throws(LuaError) {
        out.append(UInt8(ascii: "["))
        keys.append(.nil)
        for (offset, element) in array.enumerated() {
            if offset > 0 { out.append(UInt8(ascii: ",")) }
            keys[keys.count - 1] = .integer(Int64(offset + 1))
            try write(element, depth: depth + 1)
        }
        keys.removeLast()
        out.append(UInt8(ascii: "]"))
    }

    private mutating func writeObject(_ table: LuaTable, depth: Int) throws(LuaError) {
        var entries = table.array.enumerated().map { (key: LuaValue.integer(Int64($0.offset + 1)), value: $0.element) }
        entries.reserveCapacity(table.count)
        for (k, v) in table.hash { entries.append((k, v)) }
        if sortedKeys { entries.sort { LuaValue.keyOrder($0.key, $1.key) } }
        out.append(UInt8(ascii: "{"))
        for (n, entry) in entries.enumerated() {
            if n > 0 { out.append(UInt8(ascii: ",")) }
            keys.append(entry.key)
            try writeKey(entry.key)
            out.append(UInt8(ascii: ":"))
            try write(entry.value, depth: depth + 1)
            keys.removeLast()
        }
        out.append(UInt8(ascii: "}"))
    }

    private mutating func writeKey(_ key: LuaValue) throws(LuaError) {
        switch key {
        case .string(let s):
            appendString(s.bytes)
        case .integer(let n):
            out.append(UInt8(ascii: "\""))
            appendInteger(n)
            out.append(UInt8(ascii: "\""))
        case .number(let d):
            out.append(UInt8(ascii: "\""))
            try appendFloat(d)
            out.append(UInt8(ascii: "\""))
        default:
            throw conversionError("a \(key.typeName) key cannot be written as JSON (only string and number keys can)")
        }
    }

    private mutating func append(_ text: StaticString) {
        out.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private mutating func appendInteger(_ n: Int64) {
        if n < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = n.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { buffer in
            var start = buffer.count
            repeat {
                start -= 1
                buffer[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            out.append(contentsOf: buffer[start...])
        }
    }

    /// Shortest round-tripping form, always with a `.` or an exponent (`2.0`, `1e+300`, `1e-7`).
    private mutating func appendFloat(_ d: Double) throws(LuaError) {
        guard d.isFinite else {
            throw conversionError("\(LuaValue.formatNumber(d)) cannot be written as JSON (only finite numbers can)")
        }
        // Swift's description is the shortest form that round-trips; it pads
        // exponents to two digits (`1e-07`), which JSON does not need.
        let text = d.description.utf8
        guard let e = text.firstIndex(of: UInt8(ascii: "e")) else {
            out.append(contentsOf: text)
            return
        }
        out.append(contentsOf: text[...e])
        var rest = text[text.index(after: e)...]
        if let sign = rest.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            out.append(sign)
            rest = rest.dropFirst()
        }
        while rest.count > 1, rest.first == UInt8(ascii: "0") { rest = rest.dropFirst() }
        out.append(contentsOf: rest)
    }

    private mutating func appendString(_ bytes: [UInt8]) {
        // Repair invalid UTF-8 first (each bad sequence becomes U+FFFD).
        if bytes.contains(where: { $0 >= 0x80 }), String(validating: bytes, as: UTF8.self) == nil {
            appendValidString(Array(String(decoding: bytes, as: UTF8.self).utf8))
        } else {
            appendValidString(bytes)
        }
    }

    private mutating func appendValidString(_ bytes: [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var runStart = 0
        for (j, b) in bytes.enumerated() where b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") {
            out.append(contentsOf: bytes[runStart..<j])
            runStart = j + 1
            switch b {
            case UInt8(ascii: "\""): append("\\\"")
            case UInt8(ascii: "\\"): append("\\\\")
            case 0x08: append("\\b")
            case 0x0C: append("\\f")
            case 0x0A: append("\\n")
            case 0x0D: append("\\r")
            case 0x09: append("\\t")
            default:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                        hex[Int(b >> 4)], hex[Int(b & 0xF)]])
            }
        }
        out.append(contentsOf: bytes[runStart...])
        out.append(UInt8(ascii: "\""))
    }
}
