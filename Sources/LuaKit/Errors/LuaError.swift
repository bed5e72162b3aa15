/// An error from Lua or from crossing the bridge; its `description` is what a
/// user should read.
///
///     do { try lua.run(string: "x = ", name: "demo.lua") }
///     catch let error as LuaError { print(error) }   // demo.lua:1: unexpected symbol near <eof>
public enum LuaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A chunk failed to compile.
    case syntax(file: String, line: Int?, message: String)
    /// A script raised an error. `location` is `file:line` when known.
    case runtime(message: String, location: String?, traceback: String)
    /// The memory budget was exhausted.
    case memory(limit: Int?)
    /// The time budget of one call ran out.
    case timeout(limitMs: Int64, traceback: String)
    /// A value could not cross the bridge; `path` names it (`state.items[3].cb`).
    case conversion(path: String, reason: String)

    public var description: String {
        switch self {
        case .syntax(let file, let line, let message):
            let place = line.map { "\(file):\($0)" } ?? file
            return message.hasPrefix(place) ? "syntax error: \(message)" : "syntax error: \(place): \(message)"
        case .runtime(let message, let location, let traceback):
            return LuaErrorReport(message: message, location: location, traceback: traceback).text
        case .memory(let limit):
            if let limit { return "not enough memory: the script went over its \(limit / (1024 * 1024)) MB budget" }
            return "not enough memory"
        case .timeout(_, let traceback):
            return LuaErrorReport(message: message + ": the script ran too long", traceback: traceback).text
        case .conversion(let path, let reason):
            return "\(path): \(reason)"
        }
    }

    /// The one-line message without the traceback.
    public var message: String {
        switch self {
        case .runtime(let message, _, _): message
        // the shim's words (mf_push_timeout_message)
        case .timeout(let limitMs, _): "time limit of \(limitMs) ms exceeded"
        default: description
        }
    }

    /// `file:line` of the error, when known.
    public var location: String? {
        switch self {
        case .syntax(let file, let line, _): line.map { "\(file):\($0)" } ?? file
        case .runtime(_, let location, _): location
        case .timeout(_, let traceback): LuaError.firstLocation(in: traceback)
        default: nil
        }
    }

    /// Splits `"file.lua:3: msg\nstack traceback:\n..."` into its parts.
    static func runtime(fromMessage full: String) -> LuaError {
        let report = LuaErrorReport(parsing: full)
        let traceback = report.traceback ?? ""
        let location = LuaError.leadingLocation(report.message) ?? LuaError.firstLocation(in: traceback)
        return .runtime(message: report.message, location: location, traceback: traceback)
    }

    /// `file:line` at the start of a Lua message (`"init.lua:12: boom"`).
    static func leadingLocation(_ message: String) -> String? {
        // chunk names may contain ':' (paths rarely do); take the first "name:digits:".
        var idx = message.startIndex
        while let colon = message[idx...].firstIndex(of: ":") {
            let afterColon = message.index(after: colon)
            let digits = message[afterColon...].prefix(while: \.isNumber)
            if !digits.isEmpty, message[afterColon...].dropFirst(digits.count).first == ":" {
                let name = message[..<colon]
                if name.isEmpty || name.contains("\n") { return nil }
                return "\(name):\(digits)"
            }
            idx = afterColon
        }
        return nil
    }

    /// The first `file:line` in a traceback that is not a C function or `[C]`.
    static func firstLocation(in traceback: String) -> String? {
        for line in traceback.split(separator: "\n").dropFirst() {
            let t = line.trimmingWhitespace()
            if t.hasPrefix("[C]") || t.hasPrefix("(...") { continue }
            if let loc = leadingLocation(t) { return loc }
        }
        return nil
    }
}

import Foundation
