import Foundation
import LuaKit
import MoonflowHost
import MoonflowLua

/// Output formats of `moonflow run`.
public enum OutputFormat: String, Sendable, CaseIterable {
    /// For people: the action, each mutation, the changed paths, effects, errors.
    case pretty
    /// One JSON object per line.
    case jsonl
}

/// Renders feature events as text, one call per event (jsonl: `EventLine`'s lines).
///
///     let printer = EventPrinter(format: .jsonl)
///     printer.render(.state(["count": 0], seq: 0), t: 0)
///     // {"event":"state","t":0,"seq":0,"state":{"count":0}}
public final class EventPrinter: @unchecked Sendable {
    public let format: OutputFormat
    public let color: Bool
    /// jsonl: each `state` event after the first carries a JSON Patch against the previous state.
    public let statePatches: Bool
    private var lastState: LuaValue?
    /// The feature's declared `state`, for state patches (set when the feature loads or reloads).
    package var declaredState: SchemaType?
    /// pretty: the columns a line with a payload (an action's, a mutation's, an effect's fields,
    /// a state, a change) is folded to, each further piece indented (`TextWrap`).
    package var width = 100

    public init(format: OutputFormat, color: Bool = false, statePatches: Bool = false) {
        self.format = format
        self.color = color
        self.statePatches = statePatches
    }

    /// The lines for one event (jsonl: exactly one).
    /// - Parameter from: under `mf.compose`, the child a mutation or state came from.
    /// - Parameter changes: for a `state` event, what the reduce changed
    ///   (`LuaFeature.deliveredChanges`): the output is made from those entries instead of
    ///   comparing whole states, and the printer keeps no copy of the state.
    /// - Parameter stateJSON: for a `state` event in jsonl, the state already written as
    ///   JSON straight from the Lua table (`LuaFeature.stateJSON`), used instead of
    ///   encoding the event's snapshot.
    /// - Parameter asInput: an error about an input line: in pretty output it stands at
    ///   the level of an action, not indented under the action before it.
    public func render(
        _ event: FeatureEvent, t: Int, from: String? = nil, changes: [StateChange]? = nil,
        stateJSON: (() throws -> [UInt8])? = nil, asInput: Bool = false
    ) -> String {
        switch format {
        case .jsonl: return jsonl(event, t: t, from: from, changes: changes, stateJSON: stateJSON)
        case .pretty:
            var text = pretty(event, t: t, from: from, changes: changes)
            switch event {
            case .state, .action, .reaction, .mutation, .effect:
                text = text.split(separator: "\n", omittingEmptySubsequences: false).map {
                    TextWrap.fold(String($0), width: width, indent: EventPrinter.continuation)
                }.joined(separator: "\n")
            default: break
            }
            guard asInput, case .error = event else { return text }
            // "    ✗ error" under an action becomes "  ✗ error" beside the actions.
            return text.replacingOccurrences(
                of: "    \(paint("✗ error", "1;31"))", with: "  \(paint("✗ error", "1;31"))")
        }
    }

    // MARK: jsonl

    private func jsonl(
        _ event: FeatureEvent, t: Int, from child: String?, changes: [StateChange]?,
        stateJSON: (() throws -> [UInt8])?
    ) -> String {
        guard case .state(let s, let seq) = event else { return EventLine.text(event, t: t, from: child) }
        return EventLine.text(
            event, t: t, from: child,
            state: { [self] in
                if statePatches {
                    defer { lastState = changes == nil ? s : nil }
                    if seq > 0,
                        let ops = JSONPatch.patch(from: lastState, to: s, changes: changes, declared: declaredState)
                    {
                        return .patch(try JSONPatch.json(ops))
                    }
                }
                return try stateJSON.map { .json(try $0()) } ?? .value(s)
            })
    }

    // MARK: pretty

    private func paint(_ s: String, _ code: String) -> String { color ? "\u{1B}[\(code)m\(s)\u{1B}[0m" : s }

    private func pretty(_ event: FeatureEvent, t: Int, from child: String?, changes: [StateChange]?) -> String {
        let digits = String(t)  // as "%6d": right-aligned in six columns (no String(format:), slow at start-up)
        let time = paint(String(repeating: " ", count: max(0, 6 - digits.count)) + digits + " ms", "2")
        switch event {
        case .state(let s, let seq):
            defer { lastState = changes == nil ? s : nil }
            let lines: [Change]
            if seq > 0, let changes {
                lines = StateChange.outermost(changes).flatMap {
                    EventPrinter.diff($0.old, $0.new, path: EventPrinter.path($0.path))
                }
            } else if seq > 0, let old = lastState {
                lines = EventPrinter.diff(old, s, path: "")
            } else {
                return "\(time)  \(paint("state", "1")) \(s)"
            }
            let changes = lines
            if changes.isEmpty { return "\(time)      (state unchanged)" }
            return changes.map {
                "\(time)      \(paint($0.path, "36")): \(paint($0.old, "31")) → \(paint($0.new, "32"))"
            }.joined(separator: "\n")
        case .action(let a):
            return "\(time)  \(paint("→ " + EventPrinter.typeName(a), "1;34"))\(EventPrinter.fields(a, after: " "))"
        case .reaction(let a, let to, let from, let e):
            // Under the step whose effect it reacts to, as that step's mutations are.
            let why = " (react to effect \(EventPrinter.typeName(e)) from \(LuaValue.escaped(from)))"
            return
                "\(time)    \(paint("→ " + EventPrinter.typeName(a), "1;34")) to \(LuaValue.escaped(to))\(EventPrinter.fields(a, after: " "))\(why)"
        case .mutation(let m, _):
            let source = child.map { " from \(LuaValue.escaped($0))" } ?? ""
            return
                "\(time)    \(paint("• " + EventPrinter.typeName(m), "35"))\(source)\(EventPrinter.fields(m, after: " "))"
        case .effect(let e, let from):
            let source = from.map { " from \(LuaValue.escaped($0))" } ?? ""
            return
                "\(time)    \(paint("⇒ effect " + EventPrinter.typeName(e), "33"))\(source)\(EventPrinter.fields(e, after: " "))"
        case .internalEffect(let e, let from):
            // Under the step that returned it; its handler's calls and mutations follow.
            let source = from.map { " from \(LuaValue.escaped($0))" } ?? ""
            return
                "\(time)    \(paint("⇢ internal effect " + EventPrinter.typeName(e), "33"))\(source)\(EventPrinter.fields(e, after: " "))"
        case .call(let service, let call):
            return "\(time)      \(paint("↗ call " + LuaValue.escaped(service), "36")) #\(call)"
        case .invariant(let name, let seq, let action, let reason):
            let after = action.map { " after " + EventPrinter.typeName($0) } ?? ""
            let why = reason.map { ": " + EventPrinter.visible($0) } ?? ""
            return
                "\(time)    \(paint("✗ invariant " + LuaValue.escaped(name), "1;31")) broken at step \(seq)\(after)\(why)"
        case .cancelled(let id, let cause, let from):
            let source = from.map { " in \(LuaValue.escaped($0))" } ?? ""
            let why = cause.map { " (by \(EventPrinter.typeName($0)))" } ?? ""
            return "\(time)    \(paint("✕ cancelled " + LuaValue.escaped(id), "33"))\(source)\(why)"
        case .error(let message, let location):
            // Split first, then escape: a traceback's lines start with a tab, which is layout, not data.
            let report = LuaErrorReport(parsing: message)
            let first = EventPrinter.visible(report.message)
            let place = location.map { "\($0): " } ?? ""
            var text = "\(time)    \(paint("✗ error", "1;31")) \(first.hasPrefix(place) ? first : place + first)"
            // The plugin's frames only: Moonflow's own Lua and its C functions are no place to look.
            if let traceback = report.traceback {
                let frames = traceback.split(separator: "\n").dropFirst().map {
                    String($0.drop(while: { $0 == "\t" }))
                }.filter { !EventPrinter.isOwnFrame($0) }
                if !frames.isEmpty {
                    text +=
                        "\n"
                        + ([String(traceback.prefix { $0 != "\n" })] + frames).map { line in
                            EventPrinter.continuation + EventPrinter.visible(line)
                        }.joined(separator: "\n")
                }
            }
            return text
        case .log(let message, let location):
            return "\(time)    \(paint("log", "2")) \(location.map { "\($0): " } ?? "")\(EventPrinter.visible(message))"
        case .reload(let files, let ms, let changes):
            let what = changes.restarted ? "restarted" : "reloaded"
            var text =
                "\(time)  \(paint("↻ \(what) \(files.joined(separator: ", ")) (\(String(format: "%.1f", ms)) ms)", "1;32"))"
            for (name, items) in [
                ("added from initial", changes.added), ("not in initial any more", changes.stale),
                ("kept", changes.kept), ("cancelled", changes.cancelled),
            ] where !items.isEmpty {
                text += "\n             \(name): " + items.map(EventPrinter.visible).joined(separator: ", ")
            }
            return text
        }
    }

    /// Where a line's further pieces start: under the event's text, past its time.
    static let continuation = String(repeating: " ", count: 13)

    /// A traceback's frame in Moonflow rather than the plugin: a C function (`[C]: in ?`,
    /// the host's Swift functions among them), the host's compiled-in Lua (chunks named
    /// `moonflow`, `moonflow.task`, ...), or Lua's `(...tail calls...)`.
    static func isOwnFrame(_ frame: String) -> Bool {
        if frame.hasPrefix("[C]") || frame.hasPrefix("(...tail calls...)") || frame.hasPrefix("...") { return true }
        // The chunk's name is what comes before `:LINE:`; a plugin's own is a path.
        guard let colon = frame.firstIndex(of: ":") else { return false }
        let chunk = frame[..<colon]
        guard chunk == "moonflow" || chunk.hasPrefix("moonflow.") || chunk.hasPrefix("moonflow ") else { return false }
        return !chunk.contains("/") && !chunk.hasSuffix(".lua")
    }

    /// The `type` of an action, mutation or effect, control characters escaped.
    static func typeName(_ v: LuaValue) -> String { v["type"]?.stringValue.map { LuaValue.escaped($0) } ?? "?" }

    /// Text for a terminal: line breaks kept, other control characters (an escape
    /// sequence in data or in an echoed input line) written as `\027`.
    static func visible(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { LuaValue.escaped(String($0)) }.joined(
            separator: "\n")
    }

    /// `{ text = "a" }` without the `type` field.
    /// `fields(v)` after `separator`, or nothing at all for a value with no fields (no
    /// trailing space after `→ increment`).
    static func fields(_ v: LuaValue, after separator: String) -> String {
        let text = fields(v)
        return text.isEmpty ? "" : separator + text
    }

    static func fields(_ v: LuaValue) -> String {
        guard case .table(var t) = v else { return v.description }
        t["type"] = .nil
        return t.isEmpty ? "" : LuaValue.table(t).description
    }

    struct Change { let path: String; let old: String; let new: String }

    /// `path` as `diff` names it: `items[3].title` ("" for the whole state).
    static func path(_ keys: [LuaValue]) -> String {
        var path = ""
        for k in keys {
            switch k {
            case .string(let s) where LuaValue.isIdentifierPublic(s.description):
                path = path.isEmpty ? s.description : "\(path).\(s)"
            default: path = "\(path)[\(k)]"
            }
        }
        return path
    }

    /// The changed paths between two states, depth first, keys sorted.
    static func diff(_ a: LuaValue, _ b: LuaValue, path: String) -> [Change] {
        if a == b { return [] }
        guard case .table(let ta) = a, case .table(let tb) = b else {
            return [Change(path: path.isEmpty ? "state" : path, old: a.description, new: b.description)]
        }
        var out: [Change] = []
        // The sequence parts position by position (no hashing: a list that grows by one
        // item costs one comparison per item, most of them of shared storage).
        let common = min(ta.array.count, tb.array.count)
        for i in 0..<max(ta.array.count, tb.array.count) {
            let a = i < ta.array.count ? ta.array[i] : LuaValue.nil, b = i < tb.array.count ? tb.array[i] : LuaValue.nil
            if i < common, a == b { continue }
            out += diff(a, b, path: "\(path)[\(i + 1)]")
        }
        var keys = Set(ta.hash.keys)
        keys.formUnion(tb.hash.keys)
        for k in keys.sorted(by: LuaValue.keyOrder) {
            let sub: String
            switch k {
            case .string(let s) where LuaValue.isIdentifierPublic(s.description):
                sub = path.isEmpty ? s.description : "\(path).\(s)"
            default: sub = "\(path)[\(k)]"
            }
            out += diff(ta[k], tb[k], path: sub)
        }
        return out
    }
}
