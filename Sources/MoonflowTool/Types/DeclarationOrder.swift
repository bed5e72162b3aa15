import Foundation

/// The order a plugin's source writes each declaration's keys in: `actions = { add = { sku =
/// "string", qty = "integer" } }` gives `add: [sku, qty]`, and `state = { items = { "list", of
/// = { name = "string", price = "integer" } } }` gives the record's `[name, price]`. A Lua table
/// keeps no order, so the loaded declarations cannot say it; `moonflow types --swift` reads it
/// from the text, so that a generated case is `.add(sku:qty:)` and a record's initialiser
/// `ItemsItem(name:price:)` as written, not sorted (which breaks call sites when a field is
/// added).
///
/// It reads table constructors only: the feature's `state`, `actions`, `mutations` and
/// `outputs` (keys as names or `["string"]`, values as constructors, or a name a `NAME = { ...
/// }` at the file's top level gives), after skipping comments and strings. In a file of
/// several features, the one whose `name = "..."` is asked for. A declaration built another
/// way (in a loop, from a call) has no order here, and its keys stay sorted.
package struct DeclarationOrder: Sendable {
    /// Each declaration's keys in the order written, by its path from the feature:
    /// `["actions", "add"]`, `["state"]`, `["state", "items", "of"]`.
    private var keys: [[String]: [String]] = [:]

    /// The tables whose messages are read.
    static let tables: Set<String> = ["actions", "mutations", "outputs"]
    /// What the feature's own table declares: the messages' tables and the state.
    static let declarations = tables.union(["state"])

    /// Reads `file`; an unreadable file gives no order.
    package static func read(file: String, feature: String? = nil) -> DeclarationOrder {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return DeclarationOrder() }
        return DeclarationOrder(source: text, feature: feature)
    }

    package init() {}

    /// - Parameter feature: the `name` of the feature to read, when the text holds several (the
    ///   first with declarations otherwise, or when none has that name).
    package init(source: String, feature: String? = nil) {
        var reader = TableReader(tokens: LuaTokens(source).all)
        reader.readChunk()
        let declares = { (t: TableReader.Table) in
            Self.declarations.contains { t.children[$0] != nil || t.names[$0] != nil }
        }
        let candidates = reader.all.filter(declares)
        guard
            let table = candidates.first(where: { feature != nil && $0.strings["name"] == feature })
                ?? candidates.first
        else { return }
        for name in Self.declarations {
            if let declared = reader.child(table, name) { record(declared, at: [name], reader, depth: 0) }
        }
    }

    private mutating func record(_ table: TableReader.Table, at path: [String], _ reader: TableReader, depth: Int) {
        // A table that names itself (`local t = { a = t }`) ends here.
        guard depth < 64, keys[path] == nil else { return }
        keys[path] = table.keys
        for key in table.keys {
            if let child = reader.child(table, key) { record(child, at: path + [key], reader, depth: depth + 1) }
        }
    }

    /// The keys of the declaration at `path` in the order written, if the source says it:
    /// `order(["actions", "add"])`, `order(["state", "items", "of"])`.
    package func order(_ path: [String]) -> [String]? { keys[path] }

    /// The fields of `message` in `table` in the order written, if the source says it.
    package func order(_ table: String, _ message: String) -> [String]? { keys[[table, message]] }

    /// `names` in the order the declaration at `path` writes them; a name it does not write
    /// (or every name, when the source does not say) comes after, sorted.
    package func sorted(_ names: [String], at path: [String]) -> [String] {
        let written = keys[path] ?? []
        let rank = { (name: String) in written.firstIndex(of: name) ?? Int.max }
        return names.sorted { (rank($0), $0) < (rank($1), $1) }
    }
}

/// Every table constructor of a chunk, each with its keys in order and its values that are
/// constructors, strings or names.
private struct TableReader {
    final class Table {
        var keys: [String] = []
        var children: [String: Table] = [:]
        var strings: [String: String] = [:]
        /// Keys whose value is a name (`actions = actions`).
        var names: [String: String] = [:]
    }

    let tokens: [LuaTokens.Token]
    /// Every constructor, in the order it opens.
    var all: [Table] = []
    /// What `NAME = { ... }` at the chunk's top level assigns (the first of each name).
    var assigned: [String: Table] = [:]

    init(tokens: [LuaTokens.Token]) { self.tokens = tokens }

    /// `key`'s value in `table` when it is a constructor, written there or named.
    func child(_ table: Table, _ key: String) -> Table? {
        table.children[key] ?? table.names[key].flatMap { assigned[$0] }
    }

    mutating func readChunk() {
        var at = 0
        while at < tokens.count {
            if case .name(let name) = tokens[at], at + 2 < tokens.count, tokens[at + 1] == .equals,
                tokens[at + 2] == .open
            {
                at += 3
                let table = read(&at)
                if assigned[name] == nil { assigned[name] = table }
            } else if tokens[at] == .open {
                at += 1
                _ = read(&at)
            } else {
                at += 1
            }
        }
    }

    /// The constructor whose `{` was just passed, up to its `}` (`at` ends past it).
    private mutating func read(_ at: inout Int) -> Table {
        let table = Table()
        all.append(table)
        while at < tokens.count {
            let token = tokens[at]
            if token == .close { at += 1; return table }
            var key: String?
            if case .name(let name) = token, at + 1 < tokens.count, tokens[at + 1] == .equals {
                key = name; at += 2
            } else if token == .openBracket, at + 3 < tokens.count, case .string(let s) = tokens[at + 1],
                tokens[at + 2] == .closeBracket, tokens[at + 3] == .equals
            {
                key = s; at += 4
            }
            guard let key else {
                if token == .open {
                    at += 1
                    _ = read(&at)
                } else {
                    at += 1
                }
                continue
            }
            // A key written again further on (a local in a function's body) keeps its first place.
            let first = !table.keys.contains(key)
            if first { table.keys.append(key) }
            guard at < tokens.count else { break }
            switch tokens[at] {
            case .open:
                at += 1
                let child = read(&at)
                if first { table.children[key] = child }
            case .string(let s):
                if first { table.strings[key] = s }
                at += 1
            case .name(let name):
                if first { table.names[key] = name }
                at += 1
            default: break
            }
        }
        return table
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
