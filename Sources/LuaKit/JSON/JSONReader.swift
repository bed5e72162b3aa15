/// A recursive-descent JSON parser over a UTF-8 buffer.
struct JSONReader {
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
                throw fail(
                    afterComma
                        ? "expected a string key after ',' in an object, found \(found())"
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
            if isDigit(i) {
                throw fail(
                    "expected '.', 'e' or the end of the number after a leading 0 (leading zeros are not allowed)")
            }
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
        let text = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[start..<i]))
        guard let d = JSONReader.finiteDouble(text) else {
            throw fail(
                "expected a number within the range of a double, found \(String(decoding: text, as: UTF8.self))",
                at: start)
        }
        return .number(d)
    }

    /// The double a JSON number's text stands for, or nil when it is not finite (the C
    /// reader of `LuaState.withJSON` reads floats through this too).
    static func finiteDouble(_ text: UnsafeRawBufferPointer) -> Double? {
        guard let d = Double(String(decoding: text, as: UTF8.self)), d.isFinite else { return nil }
        return d
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
                throw fail(
                    "expected a control character in a string to be escaped (\\n, \\t, \\u00XX), found \(found())")
            default:
                out.append(b)
                i += 1
            }
        }
    }

    private mutating func escape(into out: inout [UInt8]) throws(JSONError) {
        i += 1
        guard let c = peek else { throw fail("expected an escape sequence after '\\', found end of input") }
        let simple: UInt8? =
            switch c {
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
                throw fail(
                    "expected a low surrogate (\\uDC00-\\uDFFF) after the high surrogate \\u\(hexString(scalar))")
            }
            i += 2
            let low = UInt32(try hex4())
            guard (0xDC00...0xDFFF).contains(low) else {
                throw fail(
                    "expected a low surrogate (\\uDC00-\\uDFFF) after the high surrogate \\u\(hexString(scalar)), found \\u\(hexString(low))",
                    at: i - 6)
            }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw fail(
                "expected a high surrogate (\\uD800-\\uDBFF) before the low surrogate \\u\(hexString(scalar))",
                at: escapeStart)
        }
        out.append(contentsOf: UTF8.encode(Unicode.Scalar(scalar)!)!)
    }

    private mutating func hex4() throws(JSONError) -> UInt16 {
        var v: UInt16 = 0
        for _ in 0..<4 {
            let digit: UInt8? =
                switch peek {
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
