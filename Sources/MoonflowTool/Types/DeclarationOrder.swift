import Foundation

/// The order a plugin's source writes each message's fields in: `actions = { add = { sku =
/// "string", qty = "integer" } }` gives `add: [sku, qty]`. A Lua table keeps no order, so the
/// loaded declarations cannot say it; `moonflow types --swift` reads it from the text, so that a
/// generated case is `.add(sku:qty:)` as written, not `.add(qty:sku:)` as sorted (which breaks
/// call sites when a field is added).
///
/// It reads table constructors only: `actions = { NAME = { FIELD = ..., ... }, ... }` (keys
/// as names or `["string"]`), after skipping comments and strings. A message built another way
/// (in a loop, from a local defined elsewhere) has no order here, and its fields stay sorted.
package struct DeclarationOrder: Sendable {
    /// For `actions`, `mutations` and `outputs`: each message's fields in the order written.
    package private(set) var fields: [String: [String: [String]]] = [:]

    /// The tables whose messages are read.
    static let tables: Set<String> = ["actions", "mutations", "outputs"]

    /// Reads `file`; an unreadable file gives no order.
    package static func read(file: String) -> DeclarationOrder {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return DeclarationOrder() }
        return DeclarationOrder(source: text)
    }

    package init() {}

    package init(source: String) {
        let tokens = LuaTokens(source).all
        var i = 0
        while i + 2 < tokens.count {
            if case .name(let table) = tokens[i], Self.tables.contains(table), tokens[i + 1] == .equals,
                tokens[i + 2] == .open
            {
                var at = i + 3
                let messages = Self.entries(tokens, from: &at) { (_: String, at: inout Int) -> [String]? in
                    guard tokens.indices.contains(at), tokens[at] == .open else { return nil }
                    var inner = at + 1
                    let names = Self.entries(tokens, from: &inner) { (_: String, _: inout Int) -> Bool? in nil }.map(
                        \.key)
                    at = inner
                    return names
                }
                for (message, names) in messages where fields[table]?[message] == nil {
                    if let names { fields[table, default: [:]][message] = names }
                }
                i = at
            } else {
                i += 1
            }
        }
    }

    /// The fields of `message` in `table` in the order written, if the source says it.
    package func order(_ table: String, _ message: String) -> [String]? { fields[table]?[message] }

    /// The `KEY = value` entries of a table constructor whose `{` was just passed, in order,
    /// up to its `}` (`at` ends past it). `value` is called with `at` on the value's first
    /// token and may read it (moving `at` past what it read); other values are skipped.
    private static func entries<V>(
        _ tokens: [LuaTokens.Token], from at: inout Int,
        value: (String, inout Int) -> V?
    ) -> [(key: String, value: V?)] {
        var out: [(key: String, value: V?)] = []
        var depth = 0
        while at < tokens.count {
            let token = tokens[at]
            if depth == 0 {
                if token == .close { at += 1; return out }
                var key: String?
                var next = at
                if case .name(let name) = token {
                    key = name; next = at + 1
                } else if token == .openBracket, at + 2 < tokens.count, case .string(let s) = tokens[at + 1],
                    tokens[at + 2] == .closeBracket
                {
                    key = s; next = at + 3
                }
                if let key, next < tokens.count, tokens[next] == .equals {
                    var valueAt = next + 1
                    let read = value(key, &valueAt)
                    out.append((key, read))
                    if read != nil { at = valueAt; continue }
                    at = next + 1
                    continue
                }
            }
            if token == .open { depth += 1 } else if token == .close { depth -= 1 }
            at += 1
        }
        return out
    }
}

/// Lua source as the few tokens `DeclarationOrder` needs: names, strings, braces, brackets and
/// `=`; comments and the text of strings never look like code.
struct LuaTokens {
    enum Token: Equatable {
        case name(String), string(String), open, close, openBracket, closeBracket, equals, other
    }

    let all: [Token]

    init(_ source: String) {
        let s = Array(source.utf8)
        var out: [Token] = []
        var i = 0
        /// The level of a long bracket opening at `j` (`[[` 0, `[==[` 2), or nil.
        func longBracket(at j: Int) -> Int? {
            guard j < s.count, s[j] == UInt8(ascii: "[") else { return nil }
            var k = j + 1, level = 0
            while k < s.count, s[k] == UInt8(ascii: "=") { level += 1; k += 1 }
            return k < s.count && s[k] == UInt8(ascii: "[") ? level : nil
        }
        /// Skips a long bracket of `level` opening at `j`; returns its text and the index past it.
        func skipLong(_ j: Int, _ level: Int) -> (String, Int) {
            let start = j + level + 2
            var k = start
            while k < s.count {
                if s[k] == UInt8(ascii: "]") {
                    var m = k + 1, eq = 0
                    while m < s.count, s[m] == UInt8(ascii: "="), eq < level { eq += 1; m += 1 }
                    if eq == level, m < s.count, s[m] == UInt8(ascii: "]") {
                        return (String(decoding: s[start..<k], as: UTF8.self), m + 1)
                    }
                }
                k += 1
            }
            return (String(decoding: s[min(start, s.count)...], as: UTF8.self), s.count)
        }
        func isNameByte(_ b: UInt8) -> Bool {
            (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) || (b >= 0x30 && b <= 0x39) || b == 0x5F
        }
        while i < s.count {
            let b = s[i]
            if b == UInt8(ascii: "-"), i + 1 < s.count, s[i + 1] == UInt8(ascii: "-") {
                if let level = longBracket(at: i + 2) { i = skipLong(i + 2, level).1; continue }
                while i < s.count, s[i] != UInt8(ascii: "\n") { i += 1 }
                continue
            }
            if b == UInt8(ascii: "\"") || b == UInt8(ascii: "'") {
                var k = i + 1
                var text: [UInt8] = []
                while k < s.count, s[k] != b, s[k] != UInt8(ascii: "\n") {
                    if s[k] == UInt8(ascii: "\\"), k + 1 < s.count { text.append(s[k + 1]); k += 2; continue }
                    text.append(s[k]); k += 1
                }
                out.append(.string(String(decoding: text, as: UTF8.self)))
                i = k + 1
                continue
            }
            if let level = longBracket(at: i) {
                let (text, next) = skipLong(i, level)
                out.append(.string(text))
                i = next
                continue
            }
            if isNameByte(b), !(b >= 0x30 && b <= 0x39) {
                var k = i
                while k < s.count, isNameByte(s[k]) { k += 1 }
                out.append(.name(String(decoding: s[i..<k], as: UTF8.self)))
                i = k
                continue
            }
            switch b {
            case UInt8(ascii: "{"): out.append(.open)
            case UInt8(ascii: "}"): out.append(.close)
            case UInt8(ascii: "["): out.append(.openBracket)
            case UInt8(ascii: "]"): out.append(.closeBracket)
            case UInt8(ascii: "="):
                // `==`, `<=`, `>=`, `~=` are comparisons, not an entry's `=`.
                if i + 1 < s.count, s[i + 1] == UInt8(ascii: "=") { out.append(.other); i += 2; continue }
                if let last = out.last, last == .other, i > 0,
                    [UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "~")].contains(s[i - 1])
                {
                    i += 1; continue
                }
                out.append(.equals)
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): break
            default:
                if isNameByte(b) {  // a number: digits, with what follows them
                    var k = i
                    while k < s.count, isNameByte(s[k]) || s[k] == UInt8(ascii: ".") { k += 1 }
                    out.append(.other)
                    i = k
                    continue
                }
                out.append(.other)
            }
            i += 1
        }
        all = out
    }
}
