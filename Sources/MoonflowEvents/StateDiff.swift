import Foundation
import LuaKit

/// The differences between two Lua values, path by path, for test messages:
/// each differing leaf as `- path = expected` then `+ path = actual`, equal
/// siblings left out.
///
///     StateDiff.lines(expected: ["count": 3, "title": "a"], actual: ["count": 2, "title": "a"])
///     // ["- count = 3", "+ count = 2"]
///
/// Data compares as Lua compares it: `1 == 1.0`, and an empty table equals an
/// empty table whether it was an array or an object. With `numbersByType`
/// (what `moonflow replay` uses) an integer and a float differ as JSON writes
/// them: `9` is not `9.0`. A long string is shown cut, around where it differs.
public enum StateDiff {
    /// The diff lines; empty when the values are equal.
    /// - Parameter root: the path of the values themselves (empty for a state).
    public static func lines(
        expected: LuaValue, actual: LuaValue, root: String = "", numbersByType: Bool = false
    ) -> [String] {
        var out: [String] = []
        diff(expected, actual, path: root, numbersByType: numbersByType, into: &out)
        return out
    }

    /// Whether the two values hold the same data.
    public static func same(_ a: LuaValue, _ b: LuaValue, numbersByType: Bool = false) -> Bool {
        switch (a, b) {
        case (.table(let x), .table(let y)):
            let ex = entries(x), ey = entries(y)
            guard ex.count == ey.count else { return false }
            for (k, v) in ex {
                guard let w = ey[k], same(v, w, numbersByType: numbersByType) else { return false }
            }
            return true
        case (.integer(let i), .number(let d)), (.number(let d), .integer(let i)):
            return !numbersByType && Double(i) == d
        default:
            return a == b
        }
    }

    private static func diff(_ e: LuaValue, _ a: LuaValue, path: String, numbersByType: Bool, into out: inout [String])
    {
        if case .table(let te) = e, case .table(let ta) = a {
            let ee = entries(te), ea = entries(ta)
            for key in sortedKeys(Set(ee.keys).union(ea.keys)) {
                let sub = join(path, key)
                diff(ee[key] ?? .nil, ea[key] ?? .nil, path: sub, numbersByType: numbersByType, into: &out)
            }
            return
        }
        guard !same(e, a, numbersByType: numbersByType) else { return }
        let shown = path.isEmpty ? "state" : path
        if case .string(let x) = e, case .string(let y) = a, max(x.bytes.count, y.bytes.count) > longString {
            let (left, right) = differingWindows(x, y)
            out.append("- \(shown) = \(left)")
            out.append("+ \(shown) = \(right)")
            return
        }
        out.append("- \(shown) = \(render(e))")
        out.append("+ \(shown) = \(render(a))")
    }

    /// Strings longer than this many bytes are shown cut.
    static let longString = 1000

    /// Two long strings, each shown from a little before the first byte where they
    /// differ, cut, with its whole length: `…"abcX"… (a string of 104857600 bytes; they differ from byte 5000001)`.
    private static func differingWindows(_ x: LuaString, _ y: LuaString) -> (String, String) {
        let common = zip(x.bytes, y.bytes).prefix { $0 == $1 }.count
        let start = max(0, common - 40)
        func window(_ s: LuaString) -> String {
            var from = min(start, s.bytes.count), to = min(s.bytes.count, from + 120)
            // Whole UTF-8 characters only.
            while from > 0, from < s.bytes.count, s.bytes[from] & 0xC0 == 0x80 { from -= 1 }
            while to < s.bytes.count, s.bytes[to] & 0xC0 == 0x80 { to += 1 }
            let text = quote(String(decoding: s.bytes[from..<to], as: UTF8.self))
            return (from > 0 ? "…" : "") + text + (to < s.bytes.count ? "…" : "")
                + " (a string of \(s.bytes.count) bytes; they differ from byte \(common + 1))"
        }
        return (window(x), window(y))
    }

    /// Every key of a table (sequence part as integer keys 1...n) with its value.
    static func entries(_ t: LuaTable) -> [LuaValue: LuaValue] {
        var all = t.hash
        for (i, v) in t.array.enumerated() { all[.integer(Int64(i + 1))] = v }
        return all
    }

    /// Integers first in order, then strings in order, then anything else.
    static func sortedKeys(_ keys: Set<LuaValue>) -> [LuaValue] {
        keys.sorted { a, b in
            switch (a, b) {
            case (.integer(let x), .integer(let y)): x < y
            case (.integer, _): true
            case (_, .integer): false
            case (.string(let x), .string(let y)): x < y
            case (.string, _): true
            case (_, .string): false
            default: a.description < b.description
            }
        }
    }

    /// `items[2]`, `fields.email`, `names["two words"]`.
    static func join(_ path: String, _ key: LuaValue) -> String {
        switch key {
        case .integer(let i): return "\(path)[\(i)]"
        case .string(let s) where isIdentifier(s.description):
            return path.isEmpty ? s.description : "\(path).\(s.description)"
        default: return "\(path)[\(render(key))]"
        }
    }

    private static func isIdentifier(_ s: String) -> Bool {
        guard let first = s.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic)
        else { return false }
        return s.unicodeScalars.allSatisfy {
            $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)))
        }
    }

    /// A value as Lua source: `"text"`, `3`, `true`, `nil`, `{ 1, 2 }`, `{ a = 1, b = "x" }`.
    public static func render(_ v: LuaValue) -> String {
        switch v {
        case .nil: return "nil"
        case .boolean(let b): return b ? "true" : "false"
        case .integer(let i): return String(i)
        case .number(let d):
            if d == d.rounded(), abs(d) < 1e15 { return String(format: "%.1f", d) }
            return String(d)
        case .string(let s) where s.bytes.count > longString:
            var cut = longString
            while cut > 0, s.bytes[cut] & 0xC0 == 0x80 { cut -= 1 }
            return quote(String(decoding: s.bytes[..<cut], as: UTF8.self)) + "… (a string of \(s.bytes.count) bytes)"
        case .string(let s): return quote(s.description)
        case .table(let t):
            if t.isEmpty { return "{}" }
            if t.hash.isEmpty { return "{ " + t.array.map(render).joined(separator: ", ") + " }" }
            let e = entries(t)
            let parts = sortedKeys(Set(e.keys)).map { key -> String in
                let value = render(e[key]!)
                if case .string(let s) = key, isIdentifier(s.description) { return "\(s.description) = \(value)" }
                return "[\(render(key))] = \(value)"
            }
            return "{ " + parts.joined(separator: ", ") + " }"
        }
    }

    private static func quote(_ s: String) -> String { "\"" + LuaValue.escaped(s, quote: true) + "\"" }
}
