/// Writes compact JSON into a byte buffer.
struct JSONWriter {
    var out: [UInt8] = []
    let sortedKeys: Bool
    /// How the value being written is named in error paths (`JSONObjectWriter` sets it per member).
    var root: String
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
            } else if t.isJSONArray, let items = JSONWriter.itemsWithHoles(t) {
                // A JSON array with a null in it (`[null, 1]`) is an array again, nulls where its holes are.
                try writeArray(items, depth: depth)
            } else {
                try writeObject(t, depth: depth)
            }
        }
    }

    /// A table from a JSON array whose other keys are the integers after its sequence part,
    /// few enough to be holes (at most twice its entries and 8 more), as its items with `nil`
    /// in the holes; nil when it has any other key.
    static func itemsWithHoles(_ t: LuaTable) -> [LuaValue]? {
        var last = t.array.count
        for key in t.hash.keys {
            guard case .integer(let n) = key, n > Int64(t.array.count), n <= Int64(2 * t.count + 8) else { return nil }
            last = max(last, Int(n))
        }
        var items = t.array
        items.reserveCapacity(last)
        for n in (t.array.count + 1)...max(last, t.array.count + 1) where n <= last {
            items.append(t.hash[.integer(Int64(n))] ?? .nil)
        }
        return items
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

    mutating func append(_ text: StaticString) {
        out.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func appendInteger(_ n: Int64) {
        if n < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = n.magnitude
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
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
        JSONWriter.floatText(d) { out.append(contentsOf: $0) }
    }

    /// Gives `emit` the pieces of `d`'s JSON text in order. Swift's description is the
    /// shortest form that round-trips; it pads exponents to two digits (`1e-07`), which
    /// JSON does not need.
    static func floatText(_ d: Double, _ emit: (Substring.UTF8View) -> Void) {
        let text = d.description.utf8
        guard let e = text.firstIndex(of: UInt8(ascii: "e")) else {
            emit(text[...])
            return
        }
        emit(text[...e])
        var rest = text[text.index(after: e)...]
        if let sign = rest.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            emit(rest.prefix(1))
            rest = rest.dropFirst()
        }
        while rest.count > 1, rest.first == UInt8(ascii: "0") { rest = rest.dropFirst() }
        emit(rest)
    }

    private mutating func appendString(_ bytes: [UInt8]) {
        // Repair invalid UTF-8 first (each bad sequence becomes U+FFFD).
        if bytes.contains(where: { $0 >= 0x80 }), String(validating: bytes, as: UTF8.self) == nil {
            var repaired = String(decoding: bytes, as: UTF8.self)
            repaired.withUTF8 { appendValidString($0) }
        } else {
            bytes.withUnsafeBufferPointer { appendValidString($0) }
        }
    }

    /// `text` as a JSON string, quoted as a Lua string of its bytes is (a Swift string is valid UTF-8).
    mutating func appendString(_ text: String) {
        var text = text
        text.withUTF8 { appendValidString($0) }
    }

    private mutating func appendValidString(_ bytes: UnsafeBufferPointer<UInt8>) {
        out.append(UInt8(ascii: "\""))
        var runStart = 0
        for (j, b) in bytes.enumerated() where b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") {
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<j]))
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
                out.append(contentsOf: [
                    UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                    hex[Int(b >> 4)], hex[Int(b & 0xF)],
                ])
            }
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        out.append(UInt8(ascii: "\""))
    }
}
