import Foundation
import LuaKit
import MoonflowHost
import MoonflowLua

/// One line of `moonflow run` input, parsed: an action (sent now or at a time
/// on the run's clock), or a prompt command.
///
///     try InputLine.parse(#"{"at":250,"send":{"type":"inc"}}"#)   // .action(inc, at: 250)
///     try InputLine.parse("add title='buy milk'", shorthand: true, actions: schema)
///     // .action({ type = "add", title = "buy milk" }, at: nil)
package enum InputLine: Equatable, Sendable {
    /// An action; `at` (ms on the run's clock) for a timed line.
    case action(LuaValue, at: Int?)
    /// A prompt command (`help`, `:advance MS`, `:run`).
    case command(PromptCommand)

    /// What a line of JSON Lines input looks like, for messages.
    static let expected = #"each line is an action like {"type":"inc"} or {"at":250,"send":{...}}"#

    /// Parses one line; nil for a blank one.
    ///
    /// A line is timed only when it has `send` and no `type`: `{"type":"schedule","at":5}`
    /// is the action `schedule` with a field `at`.
    ///
    /// - Parameters:
    ///   - shorthand: whether `name key=value` and prompt commands are accepted (the prompt).
    ///   - actions: the declared actions, to type shorthand values and fill an only field.
    /// - Throws: `InputError` saying what is wrong with the line and how to write it.
    package static func parse(
        _ line: String, shorthand: Bool = false, actions: Schema? = nil
    ) throws(InputError) -> InputLine? {
        var text = Substring(line)
        while text.first == "\u{FEFF}" { text = text.dropFirst() }  // a byte order mark from an editor
        let trimmed = text.trimmingWhitespace()
        if trimmed.isEmpty { return nil }
        if shorthand, let command = try PromptCommand.parse(trimmed, actions: actions) { return .command(command) }
        let value: LuaValue
        if trimmed.hasPrefix("{") {
            do { value = try LuaValue(json: trimmed) } catch {
                throw InputError("malformed JSON: \(error); \(expected)")
            }
        } else if shorthand {
            value = try Shorthand.parse(trimmed, actions: actions)
        } else {
            throw InputError("not a JSON object: \(expected)")
        }
        guard case .table = value else { throw InputError("not a JSON object: \(expected)") }
        if let send = value["send"], value["type"] == nil {
            guard case .integer(let at)? = value["at"], at >= 0 else {
                throw InputError(
                    #"a timed line needs "at": a whole number of milliseconds, 0 or more, as in {"at":250,"send":{...}}"#
                )
            }
            guard case .table = send else {
                throw InputError(#""send" must be the action to send, as in {"at":250,"send":{"type":"inc"}}"#)
            }
            return .action(send, at: Int(at))
        }
        if value["at"] != nil && value["type"] == nil {
            throw InputError(
                #"a line with "at" needs "send": the action to send then, as in {"at":250,"send":{"type":"inc"}}"#)
        }
        return .action(value, at: nil)
    }
}

/// A command typed at the prompt.
package enum PromptCommand: Equatable, Sendable {
    /// `help` (or `:help`): the commands and the declared actions.
    case help
    /// `:advance MS`: moves the virtual clock on by MS.
    case advance(ms: Int)
    /// `:run`: runs the virtual clock to the next idle point.
    case run
    /// `:quit` (or `:q`): ends the input, as Ctrl-D does.
    case quit
    /// `:reload`: loads the plugin's code again, keeping the state.
    case reload
    /// A hot restart: the plugin's code again, the state from its `initial`, work in flight cancelled.
    case restart
    /// `:state`: prints the whole state.
    case state

    /// The command a line is, nil when it is not one. `help` alone is a command
    /// unless the feature declares an action named `help` (`:help` always is).
    static func parse(_ line: String, actions: Schema?) throws(InputError) -> PromptCommand? {
        if line == "help" && actions?.shapes["help"] == nil { return .help }
        guard line.hasPrefix(":") else { return nil }
        let words = line.dropFirst().split(separator: " ", omittingEmptySubsequences: true)
        switch words.first {
        case "help", "h", "?": return .help
        case "run": return .run
        case "quit", "q": return .quit
        case "reload", "r": return .reload
        case "restart": return .restart
        case "state", "s": return .state
        case "advance", "a":
            guard words.count == 2, let ms = Int(words[1]), ms >= 0 else {
                throw InputError(":advance needs a number of milliseconds, 0 or more, as in :advance 300")
            }
            return .advance(ms: ms)
        default:
            throw InputError(
                "unknown command '\(line)'; commands: help, :advance MS, :run, :reload, :restart, :state, :quit (or Ctrl-D)"
            )
        }
    }
}

/// A line of input that cannot be sent, with what to write instead.
package struct InputError: Error, Sendable, Equatable, CustomStringConvertible {
    package let message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}

/// The prompt's shorthand: `add title="buy milk" done=false`, `toggle 1`.
///
/// - `key=value`; a value in double or single quotes is a string and may hold
///   spaces (`\"`, `\\`, `\n`, `\t` inside double quotes).
/// - Unquoted values are typed: integers, decimals, `true`/`false`, else strings;
///   a field declared `"string"` always gets a string.
/// - A bare value fills the action's only field; a bare declared field name is `true`.
enum Shorthand {
    static func parse(_ line: String, actions: Schema?) throws(InputError) -> LuaValue {
        let words = try tokens(line)
        guard let first = words.first, !first.quoted, !first.text.contains("=") else {
            throw InputError("a shorthand line starts with the action's name, as in `increment by=3`")
        }
        let name = first.text
        let fields = actions?.shapes[name]
        var t = LuaTable()
        t["type"] = .string(LuaString(name))
        for word in words.dropFirst() {
            if let key = word.key {
                t[key] = typed(word.text, quoted: word.quoted, declared: fields?[key]?.type)
            } else if !word.quoted, let field = fields?[word.text], field.type == .boolean || field.type == .any {
                t[word.text] = true
            } else if let fields, fields.count == 1, let (key, field) = fields.first {
                guard t[key].isNil else {
                    throw InputError("'\(word.text)': '\(name)' has one field, '\(key)', and it is given already")
                }
                t[key] = typed(word.text, quoted: word.quoted, declared: field.type)
            } else if let fields {
                let list = fields.keys.sorted()
                let hint =
                    list.isEmpty
                    ? "'\(name)' declares no fields"
                    : "write it as FIELD=VALUE; '\(name)' has fields \(list.joined(separator: ", "))"
                throw InputError("'\(word.text)': a bare value fills an action's only field; \(hint)")
            } else {
                throw InputError("'\(word.text)': write it as FIELD=VALUE")
            }
        }
        return .table(t)
    }

    private static func typed(_ raw: String, quoted: Bool, declared: Schema.FieldType?) -> LuaValue {
        if quoted || declared == .string { return .string(LuaString(raw)) }
        if let i = Int64(raw) { return .integer(i) }
        if raw.contains("."), let d = Double(raw), d.isFinite { return .number(d) }
        if raw == "true" || raw == "false" { return .boolean(raw == "true") }
        return .string(LuaString(raw))
    }

    struct Word: Equatable {
        /// `key` of `key=value`; nil for a bare word.
        var key: String?
        var text: String
        /// The value was written in quotes (so it is a string).
        var quoted: Bool
    }

    /// Splits on spaces outside quotes; `key="a b"` and `'a b'` are one word each.
    static func tokens(_ line: String) throws(InputError) -> [Word] {
        var words: [Word] = []
        var chars = Array(line)[...]
        while true {
            while chars.first == " " || chars.first == "\t" { chars.removeFirst() }
            guard !chars.isEmpty else { return words }
            var word = Word(key: nil, text: "", quoted: false)
            while let c = chars.first, c != " " && c != "\t" {
                if c == "=" && word.key == nil && !word.quoted && !word.text.isEmpty {
                    word.key = word.text
                    word.text = ""
                    chars.removeFirst()
                } else if (c == "\"" || c == "'") && word.text.isEmpty && !word.quoted {
                    chars.removeFirst()
                    word.text = try quoted(&chars, closing: c)
                    word.quoted = true
                } else if word.quoted {
                    throw InputError("text after a closing quote: put a space between values")
                } else {
                    word.text.append(c)
                    chars.removeFirst()
                }
            }
            words.append(word)
        }
    }

    private static func quoted(_ chars: inout ArraySlice<Character>, closing: Character) throws(InputError) -> String {
        var text = ""
        while let c = chars.first {
            chars.removeFirst()
            if c == closing { return text }
            if c == "\\" && closing == "\"", let next = chars.first {
                chars.removeFirst()
                switch next {
                case "n": text.append("\n")
                case "t": text.append("\t")
                default: text.append(next)
                }
            } else {
                text.append(c)
            }
        }
        throw InputError("a quote \(closing) is not closed")
    }
}
