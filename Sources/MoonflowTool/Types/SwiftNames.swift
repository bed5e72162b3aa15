import LuaKit

/// Swift names for Lua names: `is_loading` is the property `isLoading`, `open-post` the case
/// `openPost`, `default` is written `` `default` ``, and a feature named `signup.form` gives
/// the type prefix `SignupForm`.
enum SwiftNames {
    /// The words of a Lua name: split at anything that is not an ASCII letter or digit, and
    /// where a lower-case letter or digit meets an upper-case one (`hasMore` is has, More).
    static func words(_ name: String) -> [String] {
        var words: [String] = []
        var current = ""
        var previous: Character?
        for ch in name {
            guard ch.isASCII, ch.isLetter || ch.isNumber else {
                if !current.isEmpty { words.append(current); current = "" }
                previous = nil
                continue
            }
            if ch.isUppercase, let p = previous, p.isLowercase || p.isNumber, !current.isEmpty {
                words.append(current); current = ""
            }
            current.append(ch)
            previous = ch
        }
        if !current.isEmpty { words.append(current) }
        return words
    }

    /// `is_loading` → `IsLoading`; `hasMore` → `HasMore`.
    static func pascal(_ name: String) -> String {
        let parts = words(name)
        let joined = (parts.isEmpty ? fallbackWords(name) : parts).map { $0.prefix(1).uppercased() + $0.dropFirst() }
            .joined()
        return safeStart(joined)
    }

    /// `is_loading` → `isLoading`; `hasMore` stays; `URL` → `url`. Keywords get backticks.
    static func camel(_ name: String) -> String {
        if isPlainIdentifier(name) && name.first!.isLowercase && !name.contains("_") { return member(name) }
        let found = words(name)
        let parts = found.isEmpty ? fallbackWords(name) : found
        let first = parts[0]
        let head =
            first.allSatisfy(\.isUppercase) ? first.lowercased() : first.prefix(1).lowercased() + first.dropFirst()
        return member(safeStart(head + parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()))
    }

    /// An argument label: a keyword needs no backticks there (Swift warns of them), except
    /// `inout`, `var` and `let`.
    static func label(_ name: String) -> String {
        let bare = bare(camel(name))
        return ["inout", "var", "let"].contains(bare) ? "`\(bare)`" : bare
    }

    /// A member name: keywords in backticks, and the names that cannot follow a `.` even
    /// in backticks (`x.self`, `x.init`) with a trailing `_`.
    private static func member(_ name: String) -> String {
        ["self", "Self", "init", "Type", "Protocol"].contains(name) ? name + "_" : escaped(name)
    }

    /// Whether `name` is already a Swift identifier made of ASCII letters, digits and `_`.
    static func isPlainIdentifier(_ name: String) -> Bool {
        guard let first = name.first, first == "_" || (first.isASCII && first.isLetter) else { return false }
        return name.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
    }

    /// A name that starts with a digit gets a leading `_`.
    private static func safeStart(_ s: String) -> String { s.first?.isNumber == true ? "_" + s : s }

    /// The name in backticks when Swift reserves it.
    static func escaped(_ name: String) -> String { keywords.contains(name) ? "`\(name)`" : name }

    /// The name without backticks (for comparisons and derived names).
    static func bare(_ name: String) -> String { name.replacingOccurrences(of: "`", with: "") }

    /// A Swift string literal.
    static func literal(_ s: String) -> String { "\"" + literalContent(s) + "\"" }

    /// What goes between a string literal's quotes for `s`: backslashes, quotes and control
    /// characters escaped, so nothing in `s` ends the literal or interpolates.
    static func literalContent(_ s: String) -> String {
        var out = ""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// Text for a `//` comment: line breaks and other control characters escaped, so a name
    /// cannot end the comment and start code.
    static func comment(_ s: String) -> String { LuaValue.escaped(s) }

    /// A name of no ASCII letter or digit (`""`, `"+"`, `"名前"`) as identifier words:
    /// `empty`, or `u` and the hex of each scalar (`u2B`, `u540Du524D`), so it compiles and
    /// two such names stay apart.
    private static func fallbackWords(_ name: String) -> [String] {
        name.isEmpty
            ? ["empty"] : ["u" + name.unicodeScalars.map { String($0.value, radix: 16, uppercase: true) }.joined()]
    }

    /// Words Swift reserves in declarations, expressions and statements, and the ones that
    /// mean something as a member or a case (`self`, `Type`, `init`).
    static let keywords: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import", "init", "inout",
        "internal", "let", "open", "operator", "private", "precedencegroup", "protocol", "public", "rethrows", "static",
        "struct", "subscript", "typealias", "var", "break", "case", "catch", "continue", "default", "defer", "do",
        "else",
        "fallthrough", "for", "guard", "if", "in", "repeat", "return", "throw", "switch", "where", "while", "Any", "as",
        "await", "false", "is", "nil", "self", "Self", "super", "throws", "true", "try", "Type", "Protocol",
    ]
}
