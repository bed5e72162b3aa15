import Foundation
import LuaKit
import MoonflowLua

/// The pipes between `moonflow run --inspect` and the `moonflow-inspector` it starts.
///
/// The inspector's server (Hummingbird on SwiftNIO) lives in an executable of its own,
/// so that `moonflow` links neither and starts fast. `moonflow run --inspect` finds
/// `moonflow-inspector` beside its own binary and starts it with the inspector's
/// settings (`arguments`), then talks to it in JSON Lines, one object per line,
/// every object with `"m"` naming the message:
///
///     moonflow ──► child's stdin                 child's stdout ──► moonflow
///     {"m":"started","name":…,"version":1,       {"m":"listening","url":"http://…","authorities":[…]}
///      "path":…,"clock":"real","actions":{…}}    {"m":"failed","message":"127.0.0.1:80: cannot listen…"}
///     {"m":"event","t":5,"cause":{…},            {"m":"dispatch","id":1,"action":{"type":"increment"}}
///      "kind":"mutation","value":{…},"seq":1}    {"m":"restart","id":2}
///     {"m":"input","t":5,"action":{…}}           {"m":"inflight","id":3}
///     {"m":"reply","id":1,"ok":true}           {"m":"debug","id":4,"action":1,"inputs":[…],"answers":[…]}
///     {"m":"reply","id":3,"ok":true,"flights":[{"action":{…},"what":…,"id":4,"summary":…}]}
///
/// - **The child's first line** says whether it serves the page: `listening` with the
///   page's URL (token included) and the `Host` names it answers to, or `failed` with
///   why (the message `moonflow: --inspect …` prints). `moonflow` prints the URL as the
///   run's `inspector` event, as it did when the server ran inside it.
/// - **Parent to child:** what a `RunObserver` is told (`started`, `event` for
///   `observe(_:t:cause:)`, `input`) in the order it is told, and the `reply` to each
///   command, in the same stream, so a reply comes after the `input` of the action it
///   dispatched (the order the inspector's hub saw in one process).
/// - **Child to parent:** the page's commands that need the run: `dispatch` an action,
///   `restart`, `inflight` (the work in flight) and `debug` (open a past step in the
///   debugger: the input lines up to its action, the service answers). Each has an `id`; the parent answers
///   each with a `reply` of that `id`: `ok`, `message` (the error's text) when it failed,
///   and `flights` for `inflight`. The child's caller waits for it, as it waited for the
///   run's own `RunDispatcher` in one process.
/// - **Ends:** the child ends when its stdin ends (the run ended or died); it ignores
///   SIGINT, which a terminal's Ctrl-C sends the whole process group, so the run decides.
///   The parent ignores a child that went away.
///
/// Values are JSON as `LuaValue.json(sortedKeys:root:)` writes them and `LuaValue(json:)`
/// reads them, which is how the inspector's hub writes and reads them anyway; each line is
/// put together by LuaKit's `JSONObjectWriter`, members in the order shown.
package enum InspectorPipe {
    /// The child's file name, beside the `moonflow` binary.
    package static let executableName = "moonflow-inspector"

    /// What `moonflow` writes to the child.
    package enum ToChild: Sendable, Equatable {
        case started(
            name: String, version: Int64, path: String, actions: [String: [String: String]]?, clock: FeatureClock)
        /// `causeID` tells equal causes apart (the action's number in its loop), when known.
        case event(FeatureEvent, t: Int, cause: LuaValue?, causeID: String? = nil)
        case input(LuaValue, t: Int)
        /// A service call's answer, as the `service` line of a recording says it: the
        /// inspector's `rerun` answers the call the same way at the same point.
        case answered(line: String)
        /// `message`: the error's text when the command failed; `flights`: the answer to `inflight`.
        case reply(id: Int, message: String?, flights: [Flight]?)
    }

    /// What the child writes to `moonflow`.
    package enum ToParent: Sendable, Equatable {
        case listening(url: String, authorities: [String])
        case failed(message: String)
        case dispatch(id: Int, action: LuaValue)
        case restart(id: Int)
        case inFlight(id: Int)
        /// Open a past step in the debugger (`RunDispatcher.openInDebugger`): the input lines
        /// up to that step's action, the service answers, and the action's place from 0.
        case debug(id: Int, inputs: [String], answers: [String], action: Int)
    }

    /// Work in flight as it crosses: the action that started it, its number, what it
    /// is, and `FeatureFlight.summary` as the run wrote it.
    package struct Flight: Sendable, Equatable {
        package var action: LuaValue
        package var what: String
        package var child: String?
        package var actionID: Int
        package var summary: String

        package init(_ flight: FeatureFlight) {
            action = flight.action
            what = flight.what
            child = flight.child
            actionID = flight.actionID
            summary = flight.summary
        }

        package init(action: LuaValue, what: String, child: String?, actionID: Int, summary: String) {
            self.action = action
            self.what = what
            self.child = child
            self.actionID = actionID
            self.summary = summary
        }

        /// The `FeatureFlight` again: its tag is read back from the summary (`type #3 (tag)`).
        package var featureFlight: FeatureFlight {
            let own =
                child.map { summary.hasPrefix("\($0): ") ? String(summary.dropFirst($0.count + 2)) : summary }
                ?? summary
            let head = "\(action["type"]?.stringValue ?? "?") #\(actionID)"
            var tag: String?
            if own.hasPrefix(head + " ("), own.hasSuffix(")") {
                tag = String(own.dropFirst(head.count + 2).dropLast())
            }
            return FeatureFlight(action: action, what: what, child: child, actionID: actionID, tag: tag)
        }
    }

    /// A line the other side wrote that is not a message of this protocol.
    package struct BadLine: Error, CustomStringConvertible {
        package let description: String
    }

    // MARK: - The child's command line

    /// The child's arguments: where to listen and what to keep.
    package static func arguments(address: String, frames: Int, bytes: Int) -> [String] {
        ["--listen", address, "--frames", String(frames), "--bytes", String(bytes)]
    }

    /// `arguments` read back; nil when they are not.
    package static func settings(_ arguments: [String]) -> (address: String, frames: Int, bytes: Int)? {
        var address: String?, frames: Int?, bytes: Int?
        var i = 0
        while i + 1 < arguments.count {
            switch arguments[i] {
            case "--listen": address = arguments[i + 1]
            case "--frames": frames = Int(arguments[i + 1])
            case "--bytes": bytes = Int(arguments[i + 1])
            default: return nil
            }
            i += 2
        }
        guard i == arguments.count, let address, let frames, let bytes else { return nil }
        return (address, frames, bytes)
    }

    /// Parses `HOST:PORT`, `:PORT` or `PORT` (host 127.0.0.1): what `--inspect` takes.
    /// - Throws: `HostError` naming the text and saying what an address looks like.
    package static func address(_ text: String) throws -> (host: String, port: Int) {
        var host = "127.0.0.1", portText = text
        if let colon = text.lastIndex(of: ":") {
            let h = String(text[..<colon])
            if !h.isEmpty { host = h.hasPrefix("[") && h.hasSuffix("]") ? String(h.dropFirst().dropLast()) : h }
            portText = String(text[text.index(after: colon)...])
        }
        guard let port = Int(portText), (0...65535).contains(port) else {
            throw HostError("\(text): give HOST:PORT (127.0.0.1:8080), or :0 for any free port on loopback")
        }
        return (host, port)
    }

    /// A feature's declared actions as the `started` message carries them (type names, `?`
    /// for optional fields); nil under an `mf.compose` that declares none.
    package static func declared(_ schema: Schema?) -> [String: [String: String]]? {
        schema.map { $0.shapes.mapValues { $0.mapValues { $0.type.rawValue + ($0.optional ? "?" : "") } } }
    }

    /// `declared` read back into the schema the inspector's page is built from.
    package static func schema(_ declared: [String: [String: String]]?) -> Schema? {
        declared.flatMap { declared in
            try? Schema(
                kind: "action",
                declaration: LuaValue(declared.mapValues { fields in LuaValue(fields.mapValues { LuaValue($0) }) }))
        }
    }

    // MARK: - Writing

    /// The line of `message`; over `moonflow serve`'s link, `feature` (the feature's number
    /// in the app) goes first, as `"f"`.
    package static func line(_ message: ToChild, feature: Int? = nil) -> String {
        switch message {
        case let .started(name, version, path, actions, clock):
            var line = head("started", feature)
            line.add("name", name)
            line.add("version", version)
            line.add("path", path)
            line.add("clock", clock.rawValue)
            if let actions {
                var declared = JSONObjectWriter()
                for (name, fields) in actions.sorted(by: { $0.key < $1.key }) {
                    var shape = JSONObjectWriter()
                    for (field, type) in fields.sorted(by: { $0.key < $1.key }) { shape.add(field, type) }
                    declared.add(name, shape)
                }
                line.add("actions", declared)
            } else {
                line.add("actions", raw: "null")
            }
            return line.text
        case let .event(event, t, cause, causeID):
            var line = head("event", feature)
            line.add("t", t)
            if let cause { line.add("cause", cause, root: "value", otherwise: "null") }
            if let causeID { line.add("causeID", causeID) }
            eventFields(event, into: &line)
            return line.text
        case let .input(action, t):
            var line = head("input", feature)
            line.add("t", t)
            line.add("action", action, root: "value", otherwise: "null")
            return line.text
        case let .answered(answer):
            var line = head("answered", feature)
            line.add("line", answer)
            return line.text
        case let .reply(id, message, flights):
            var line = head("reply", feature)
            line.add("id", id)
            line.add("ok", message == nil)
            if let message { line.add("message", message) }
            if let flights {
                line.add(
                    "flights",
                    flights.map { f in
                        var flight = JSONObjectWriter()
                        flight.add("action", f.action, root: "value", otherwise: "null")
                        flight.add("what", f.what)
                        if let child = f.child { flight.add("child", child) }
                        flight.add("id", f.actionID)
                        flight.add("summary", f.summary)
                        return flight
                    })
            }
            return line.text
        }
    }

    package static func line(_ message: ToParent, feature: Int? = nil) -> String {
        switch message {
        case let .listening(url, authorities):
            var line = head("listening", feature)
            line.add("url", url)
            line.add("authorities", authorities)
            return line.text
        case let .failed(message):
            var line = head("failed", feature)
            line.add("message", message)
            return line.text
        case let .dispatch(id, action):
            var line = head("dispatch", feature)
            line.add("id", id)
            line.add("action", action, root: "value", otherwise: "null")
            return line.text
        case let .restart(id):
            var line = head("restart", feature)
            line.add("id", id)
            return line.text
        case let .inFlight(id):
            var line = head("inflight", feature)
            line.add("id", id)
            return line.text
        case let .debug(id, inputs, answers, action):
            var line = head("debug", feature)
            line.add("id", id)
            line.add("action", action)
            line.add("inputs", inputs)
            line.add("answers", answers)
            return line.text
        }
    }

    /// A message's first members: the feature's number over `serve`'s link, and `"m"`.
    private static func head(_ m: String, _ feature: Int?) -> JSONObjectWriter {
        var line = JSONObjectWriter()
        if let feature { line.add("f", feature) }
        line.add("m", m)
        return line
    }

    private static func eventFields(_ event: FeatureEvent, into line: inout JSONObjectWriter) {
        func kind(_ name: String, value: LuaValue) {
            line.add("kind", name)
            line.add("value", value, root: "value", otherwise: "null")
        }
        switch event {
        case .action(let a): kind("action", value: a)
        case .reaction(let a, let to, let from, let e):
            kind("reaction", value: a)
            line.add("to", to)
            line.add("from", from)
            line.add("effect", e, root: "effect", otherwise: "null")
        case .mutation(let m, let seq): kind("mutation", value: m); line.add("seq", seq)
        case .state(let s, let seq): kind("state", value: s); line.add("seq", seq)
        case .effect(let e, let from):
            kind("effect", value: e)
            if let from { line.add("from", from) }
        case .internalEffect(let e, let from):
            kind("internal", value: e)
            if let from { line.add("from", from) }
        case .call(let service, let call):
            line.add("kind", "call")
            line.add("service", service)
            line.add("call", call)
        case .invariant(let name, let seq, let action, let reason):
            line.add("kind", "invariant")
            line.add("name", name)
            line.add("seq", seq)
            if let action { line.add("action", action, root: "action", otherwise: "null") }
            if let reason { line.add("reason", reason) }
        case .cancelled(let id, let cause, let from):
            line.add("kind", "cancelled")
            line.add("id", id)
            // "by", not "cause": the message's own `cause` is its frame's (the inspector's link).
            if let cause { line.add("by", cause, root: "by", otherwise: "null") }
            if let from { line.add("from", from) }
        case .error(let message, let location), .log(let message, let location):
            line.add("kind", { if case .error = event { "error" } else { "log" } }())
            line.add("message", message)
            if let location { line.add("location", location) }
        case .reload(let files, let ms, let changes):
            line.add("kind", "reload")
            line.add("files", files)
            line.add("ms", raw: ms.isFinite ? "\(ms)" : "0")
            line.add("added", changes.added)
            line.add("stale", changes.stale)
            line.add("kept", changes.kept)
            line.add("cancelled", changes.cancelled)
        }
    }

    // MARK: - Reading

    package static func toChild(_ line: String) throws -> ToChild {
        let o = try object(line)
        switch o["m"]?.stringValue {
        case "started":
            var actions: [String: [String: String]]?
            if case .table(let t)? = o["actions"] {
                var declared: [String: [String: String]] = [:]
                for (name, fields) in t.entries {
                    guard let name = name.stringValue, case .table(let f) = fields else { throw bad(line) }
                    var shape: [String: String] = [:]
                    for (k, v) in f.entries {
                        guard let k = k.stringValue, let v = v.stringValue else { throw bad(line) }
                        shape[k] = v
                    }
                    declared[name] = shape
                }
                actions = declared
            }
            guard let name = o["name"]?.stringValue, let version = o["version"]?.intValue,
                let path = o["path"]?.stringValue,
                let clock = o["clock"]?.stringValue.flatMap(FeatureClock.init(rawValue:))
            else { throw bad(line) }
            return .started(name: name, version: version, path: path, actions: actions, clock: clock)
        case "event":
            return .event(
                try event(o, line), t: try int(o["t"], line), cause: o["cause"], causeID: o["causeID"]?.stringValue)
        case "input":
            return .input(o["action"] ?? .nil, t: try int(o["t"], line))
        case "answered":
            guard let answer = o["line"]?.stringValue else { throw bad(line) }
            return .answered(line: answer)
        case "reply":
            var flights: [Flight]?
            if case .table(let t)? = o["flights"] {
                flights = try (0..<t.array.count).map { i in
                    let f = t.array[i]
                    guard let what = f["what"]?.stringValue, let summary = f["summary"]?.stringValue else {
                        throw bad(line)
                    }
                    return Flight(
                        action: f["action"] ?? .nil, what: what, child: f["child"]?.stringValue,
                        actionID: try int(f["id"], line), summary: summary)
                }
            }
            return .reply(id: try int(o["id"], line), message: o["message"]?.stringValue, flights: flights)
        default:
            throw bad(line)
        }
    }

    package static func toParent(_ line: String) throws -> ToParent {
        let o = try object(line)
        switch o["m"]?.stringValue {
        case "listening":
            guard let url = o["url"]?.stringValue, case .table(let names)? = o["authorities"] else { throw bad(line) }
            return .listening(url: url, authorities: names.array.compactMap(\.stringValue))
        case "failed":
            return .failed(message: o["message"]?.stringValue ?? "")
        case "dispatch":
            return .dispatch(id: try int(o["id"], line), action: o["action"] ?? .nil)
        case "restart":
            return .restart(id: try int(o["id"], line))
        case "inflight":
            return .inFlight(id: try int(o["id"], line))
        case "debug":
            guard case .table(let inputs)? = o["inputs"], case .table(let answers)? = o["answers"] else {
                throw bad(line)
            }
            return .debug(
                id: try int(o["id"], line), inputs: inputs.array.compactMap(\.stringValue),
                answers: answers.array.compactMap(\.stringValue), action: try int(o["action"], line))
        default:
            throw bad(line)
        }
    }

    private static func event(_ o: LuaValue, _ line: String) throws -> FeatureEvent {
        func strings(_ key: String) -> [String] {
            guard case .table(let t)? = o[key] else { return [] }
            return t.array.compactMap(\.stringValue)
        }
        switch o["kind"]?.stringValue {
        case "action": return .action(o["value"] ?? .nil)
        case "reaction":
            guard let to = o["to"]?.stringValue, let from = o["from"]?.stringValue else { throw bad(line) }
            return .reaction(o["value"] ?? .nil, to: to, from: from, effect: o["effect"] ?? .nil)
        case "mutation": return .mutation(o["value"] ?? .nil, seq: try int(o["seq"], line))
        case "state": return .state(o["value"] ?? .nil, seq: try int(o["seq"], line))
        case "effect": return .effect(o["value"] ?? .nil, from: o["from"]?.stringValue)
        case "internal": return .internalEffect(o["value"] ?? .nil, from: o["from"]?.stringValue)
        case "call":
            guard let service = o["service"]?.stringValue else { throw bad(line) }
            return .call(service: service, call: try int(o["call"], line))
        case "invariant":
            guard let name = o["name"]?.stringValue else { throw bad(line) }
            return .invariant(
                name: name, seq: try int(o["seq"], line), action: o["action"], reason: o["reason"]?.stringValue)
        case "cancelled":
            guard let id = o["id"]?.stringValue else { throw bad(line) }
            return .cancelled(id: id, cause: o["by"], from: o["from"]?.stringValue)
        case "error": return .error(message: o["message"]?.stringValue ?? "", location: o["location"]?.stringValue)
        case "log": return .log(message: o["message"]?.stringValue ?? "", location: o["location"]?.stringValue)
        case "reload":
            let ms: Double =
                switch o["ms"] {
                case .number(let d)?: d
                case .integer(let i)?: Double(i)
                default: 0
                }
            return .reload(
                files: strings("files"), ms: ms,
                changes: ReloadChanges(
                    added: strings("added"), stale: strings("stale"), kept: strings("kept"),
                    cancelled: strings("cancelled")))
        default: throw bad(line)
        }
    }

    private static func object(_ line: String) throws -> LuaValue {
        guard let o = try? LuaValue(json: line), case .table = o else { throw bad(line) }
        return o
    }

    private static func int(_ v: LuaValue?, _ line: String) throws -> Int {
        guard let i = v?.intValue else { throw bad(line) }
        return Int(i)
    }

    private static func bad(_ line: String) -> BadLine {
        BadLine(description: "not a line of the inspector's pipe protocol: \(line.prefix(200))")
    }

}

/// Whole lines out of bytes read a block at a time (the inspector's pipe), in time linear in
/// the bytes: each byte is looked at once for a newline, however long its line (an 8 MB state
/// line read in 64 KB blocks was scanned again from its start after every block).
///
///     var lines = LineSplitter()
///     for line in lines.add(block) { handle(line) }
///     if let last = lines.finish() { handle(last) }   // at the end: a last line without newline
package struct LineSplitter {
    private var pending: [UInt8] = []
    /// Where the next line starts in `pending`, and how far past it no newline was found.
    private var start = 0
    private var searched = 0
    /// Bytes looked at so far (each once).
    package private(set) var bytesScanned = 0

    package init() {}

    /// Takes `bytes`; returns the lines they complete, without their newlines.
    package mutating func add<Bytes: Collection>(_ bytes: Bytes) -> [String] where Bytes.Element == UInt8 {
        pending.append(contentsOf: bytes)
        var lines: [String] = []
        var from = start + searched
        bytesScanned += pending.count - from
        while let newline = pending[from...].firstIndex(of: UInt8(ascii: "\n")) {
            lines.append(String(decoding: pending[start..<newline], as: UTF8.self))
            start = newline + 1
            from = start
        }
        searched = pending.count - start
        // Done lines go once they are half of what is held: each byte is moved a bounded number of times.
        if start > 0, start >= pending.count / 2 {
            pending.removeFirst(start)
            start = 0
        }
        return lines
    }

    /// The bytes after the last newline as a line (nil: none), and nothing held after.
    package mutating func finish() -> String? {
        defer { pending = []; start = 0; searched = 0 }
        return start < pending.count ? String(decoding: pending[start...], as: UTF8.self) : nil
    }
}
