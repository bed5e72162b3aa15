/// A Lua error's text kept in its parts: the message, where it happened, and the traceback.
/// Lua gives them joined (`"init.lua:3: boom\nstack traceback:\n..."`); this type is the one
/// place that splits them and the one place that joins them again.
///
///     let report = LuaErrorReport(parsing: "init.lua:3: boom\nstack traceback:\n\t[C]: in ?")
///     report.message     // "init.lua:3: boom"
///     report.traceback   // "stack traceback:\n\t[C]: in ?"
///     report.text        // the text it was parsed from
public struct LuaErrorReport: Sendable, Equatable, CustomStringConvertible {
    /// The message alone (any `file:line:` in front of it kept), without the traceback.
    public var message: String
    /// `file:line` of the error, when known.
    public var location: String?
    /// `stack traceback:` and its lines, when Lua gave one.
    public var traceback: String?

    /// Where the traceback starts in a joined text.
    static let tracebackMarker = "\nstack traceback:"

    /// A report from its parts; an empty traceback counts as none.
    ///
    ///     LuaErrorReport(message: "boom", location: "init.lua:3", traceback: "")   // no traceback
    ///
    /// - Parameters:
    ///   - message: The message without the traceback.
    ///   - location: `file:line`, when known.
    ///   - traceback: `stack traceback:` and its lines; nil or empty for none.
    public init(message: String, location: String? = nil, traceback: String? = nil) {
        self.message = message
        self.location = location
        self.traceback = traceback?.isEmpty == false ? traceback : nil
    }

    /// Splits a message from the traceback Lua's message handler appended to it.
    ///
    ///     LuaErrorReport(parsing: "boom").traceback   // nil
    ///
    /// - Parameters:
    ///   - text: A message, optionally followed by `\nstack traceback:` and its lines.
    ///   - location: `file:line`, when the caller knows it.
    package init(parsing text: String, location: String? = nil) {
        guard let r = text.range(of: Self.tracebackMarker) else {
            self.init(message: text, location: location)
            return
        }
        self.init(
            message: String(text[..<r.lowerBound]), location: location,
            traceback: String(text[text.index(after: r.lowerBound)...]))
    }

    /// The message, then the traceback on the lines after it: what Lua's own handler prints.
    public var text: String { traceback.map { "\(message)\n\($0)" } ?? message }

    public var description: String { text }
}
