import Foundation

/// Where each key of a definition table is written in its Lua file, so a
/// problem with `strategy.load` points at the line of `load = ...` rather
/// than at the line of `mf.feature {`.
///
///     let lines = DefinitionSource.keyLines(in: source, fromLine: 13)
///     lines[["strategy", "load"]]   // 58
///
/// A small Lua-aware scan of the text: strings and comments are skipped,
/// function bodies are skipped (their assignments are not keys), and keys are
/// `name =` or `["name"] =` at each table level, with the path of the keys
/// of the tables around them.
enum DefinitionSource {
    /// The line of every key path inside the first table constructor at or after `fromLine`.
    static func keyLines(in text: String, fromLine: Int) -> [[String]: Int] {
        var scanner = Scanner(bytes: Array(text.utf8))
        scanner.skip(toLine: fromLine)
        // The definition's opening brace.
        while let token = scanner.next() { if token.text == "{" { break } }
        var found: [[String]: Int] = [:]
        var path: [String] = []  // the keys of the tables around this point
        var lastKey: String?  // the key whose value is being read at this level
        var pending: [Token] = []  // the last tokens, to recognise `name =` and `["name"] =`
        var blocks = 0  // inside a function body: nothing is a key
        while let token = scanner.next() {
            if blocks > 0 {
                switch token.text {
                case "function", "do", "if", "repeat": blocks += 1
                case "end", "until": blocks -= 1
                default: break
                }
                continue
            }
            switch token.text {
            case "function":
                blocks = 1
            case "{":
                path.append(lastKey ?? "#")
                lastKey = nil
            case "}":
                guard !path.isEmpty else { return found }
                path.removeLast()
                lastKey = nil
            case ",", ";":
                lastKey = nil
            case "=":
                var key: String?
                if let name = pending.last, name.isName {
                    key = name.text
                } else if pending.count >= 3, pending[pending.count - 1].text == "]",
                    pending[pending.count - 3].text == "[",
                    let quoted = pending[pending.count - 2].stringValue
                {
                    key = quoted
                }
                if let key {
                    lastKey = key
                    let full = path + [key]
                    if found[full] == nil { found[full] = token.line }
                }
            default:
                break
            }
            pending.append(token)
            if pending.count > 3 { pending.removeFirst() }
        }
        return found
    }

    /// Each problem as `file:line: message`, at the line of the longest part of
    /// its path found in the file (else the line of the call, `caller`), in line order.
    static func locate(_ problems: [DefinitionError.Problem], caller: String?) -> [String] {
        guard let caller, let colon = caller.lastIndex(of: ":"),
            let callLine = Int(caller[caller.index(after: colon)...])
        else {
            return problems.map(\.message)
        }
        let file = String(caller[..<colon])
        let lines =
            (try? String(contentsOfFile: file, encoding: .utf8)).map { keyLines(in: $0, fromLine: callLine) } ?? [:]
        let located = problems.map { problem -> (line: Int, text: String) in
            var path = problem.path
            while !path.isEmpty, lines[path] == nil { path.removeLast() }
            let line = path.isEmpty ? callLine : lines[path]!
            return (line, "\(file):\(line): \(problem.message)")
        }
        // In the file's order, as an editor lists them.
        return located.enumerated().sorted { ($0.element.line, $0.offset) < ($1.element.line, $1.offset) }.map(
            \.element.text)
    }

    struct Token {
        let text: String
        let line: Int
        /// A quoted string's contents (the token's text is then its contents too).
        var stringValue: String? { isString ? text : nil }
        var isString = false
        var isName: Bool {
            guard !isString, let first = text.unicodeScalars.first else { return false }
            return (first == "_" || first.isLetterOrMark) && !Token.keywords.contains(text)
        }
        static let keywords: Set<String> = [
            "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto",
            "if", "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
        ]
    }

    /// Lua tokens, enough to find keys: names, strings, punctuation; numbers as names' neighbours.
    struct Scanner {
        let bytes: [UInt8]
        var at = 0
        var line = 1

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func skip(toLine target: Int) {
            while line < target, at < bytes.count { if bytes[at] == 10 { line += 1 }; at += 1 }
        }

        /// The level of a long bracket starting at `at` (`[[` 0, `[==[` 2), or nil.
        private func longBracket(_ i: Int) -> Int? {
            guard i < bytes.count, bytes[i] == UInt8(ascii: "[") else { return nil }
            var j = i + 1, level = 0
            while j < bytes.count, bytes[j] == UInt8(ascii: "=") { level += 1; j += 1 }
            return j < bytes.count && bytes[j] == UInt8(ascii: "[") ? level : nil
        }

        /// Skips a long string or comment whose opening bracket starts at `at`.
        private mutating func skipLong(level: Int) {
            at += level + 2
            let close = [UInt8(ascii: "]")] + Array(repeating: UInt8(ascii: "="), count: level) + [UInt8(ascii: "]")]
            while at < bytes.count {
                if bytes[at] == 10 { line += 1 }
                if bytes[at] == close[0], at + close.count <= bytes.count, Array(bytes[at..<at + close.count]) == close
                {
                    at += close.count; return
                }
                at += 1
            }
        }

        mutating func next() -> Token? {
            while at < bytes.count {
                let c = bytes[at]
                if c == 10 { line += 1; at += 1; continue }
                if c == 32 || c == 9 || c == 13 { at += 1; continue }
                if c == UInt8(ascii: "-"), at + 1 < bytes.count, bytes[at + 1] == UInt8(ascii: "-") {
                    at += 2
                    if let level = longBracket(at) {
                        skipLong(level: level)
                    } else {
                        while at < bytes.count, bytes[at] != 10 { at += 1 }
                    }
                    continue
                }
                let start = line
                if c == UInt8(ascii: "\"") || c == UInt8(ascii: "'") {
                    var out: [UInt8] = []
                    at += 1
                    while at < bytes.count, bytes[at] != c, bytes[at] != 10 {
                        if bytes[at] == UInt8(ascii: "\\"), at + 1 < bytes.count { at += 1 }
                        out.append(bytes[at]); at += 1
                    }
                    at += 1
                    var token = Token(text: String(decoding: out, as: UTF8.self), line: start)
                    token.isString = true
                    return token
                }
                if let level = longBracket(at) {
                    let from = at + level + 2
                    skipLong(level: level)
                    var token = Token(
                        text: String(
                            decoding: bytes[min(from, bytes.count)..<max(from, at - level - 2)], as: UTF8.self),
                        line: start)
                    token.isString = true
                    return token
                }
                if c == UInt8(ascii: "_") || (c | 0x20 >= UInt8(ascii: "a") && c | 0x20 <= UInt8(ascii: "z"))
                    || (c >= 48 && c <= 57)
                {
                    let from = at
                    while at < bytes.count,
                        bytes[at] == UInt8(ascii: "_")
                            || (bytes[at] | 0x20 >= UInt8(ascii: "a") && bytes[at] | 0x20 <= UInt8(ascii: "z"))
                            || (bytes[at] >= 48 && bytes[at] <= 57)
                            || bytes[at] == UInt8(ascii: ".") && (c >= 48 && c <= 57)
                    { at += 1 }
                    return Token(text: String(decoding: bytes[from..<at], as: UTF8.self), line: start)
                }
                if c == UInt8(ascii: "="), at + 1 < bytes.count, bytes[at + 1] == UInt8(ascii: "=") {
                    at += 2
                    return Token(text: "==", line: start)
                }
                for op in ["~=", "<=", ">=", "::", "..."]
                where at + op.utf8.count <= bytes.count && Array(bytes[at..<at + op.utf8.count]) == Array(op.utf8) {
                    at += op.utf8.count
                    return Token(text: op, line: start)
                }
                at += 1
                return Token(text: String(UnicodeScalar(c)), line: start)
            }
            return nil
        }
    }
}

extension Unicode.Scalar {
    /// Whether the scalar is a letter or a combining mark (general categories L and M), as
    /// Foundation's `CharacterSet.letters` has it, without building a `CharacterSet`.
    fileprivate var isLetterOrMark: Bool {
        switch properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
            .nonspacingMark, .spacingMark, .enclosingMark:
            true
        default: false
        }
    }
}
