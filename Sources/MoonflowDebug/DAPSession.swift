import Foundation
import LuaKit

/// What a debug session drives: a run's features, each a thread in the editor.
/// `moonflow run --debug` and `moonflow test --debug` give one; a test gives its own.
package protocol DebugTarget: AnyObject, Sendable {
    /// The features (or Lua states) the editor shows as threads, by id.
    func threads() -> [DebugThread]
    /// Replaces the breakpoints of the file at `path` with `requested`, and says for
    /// each where it landed (a line with code on it) or why it could not be placed.
    func setBreakpoints(path: String, _ requested: [BreakpointRequest]) -> [PlacedBreakpoint]
    /// Which errors stop the run: `all`, `uncaught`, both or none (`ExceptionFilter`).
    func setExceptionFilters(_ filters: Set<ExceptionFilter>)
    /// The editor has sent its breakpoints: a run that waits for it (`--debug-wait`) goes on.
    func configurationDone()
    /// The editor went away: every breakpoint goes and a paused feature goes on.
    func detach()
    /// The stopped thread's frames, innermost first (level 1 first); nil when nothing is stopped.
    func stackTrace() -> Result<[LuaFrame], any Error>?
    /// The variables behind a reference (a frame's scope, or a table); nil when nothing is stopped.
    func variables(_ reference: Int) -> Result<[LuaVariable], any Error>?
    /// An expression's value in frame `level`; nil when nothing is stopped.
    func evaluate(_ expression: String, frame level: Int) -> Result<LuaVariable, any Error>?
    /// Lets the stopped thread go on (run, or step in, over or out); false when nothing was stopped.
    func resume(_ mode: LuaResume) -> Bool
    /// Stops the run at the next line of a plugin's file it runs.
    func pause()
}

package struct DebugThread: Equatable, Sendable {
    package let id: Int
    package let name: String
    package init(id: Int, name: String) { self.id = id; self.name = name }
}

/// A breakpoint as the editor asks for it (`setBreakpoints`' `SourceBreakpoint`).
package struct BreakpointRequest: Equatable, Sendable {
    package let line: Int
    /// A Lua expression: the breakpoint stops only when it is true.
    package let condition: String?
    /// `N`, `>= N`, `> N`, `== N` or `% N`: stops on the hits that match.
    package let hitCondition: String?
    /// Text with `{expression}`s: printed instead of stopping (a log point).
    package let logMessage: String?
    package init(line: Int, condition: String? = nil, hitCondition: String? = nil, logMessage: String? = nil) {
        self.line = line
        self.condition = condition
        self.hitCondition = hitCondition
        self.logMessage = logMessage
    }
}

/// Where a breakpoint landed, or why it did not.
package struct PlacedBreakpoint: Equatable, Sendable {
    package let line: Int?
    package let message: String?
    package init(line: Int?, message: String? = nil) { self.line = line; self.message = message }
}

/// The exception breakpoints an editor offers (`exceptionBreakpointFilters`).
package enum ExceptionFilter: String, CaseIterable, Sendable {
    /// Every error, at the failing line before the stack unwinds: those of `uncaught`, and
    /// those a plugin's own `pcall`, `xpcall` or `coroutine.resume` catches.
    case all
    /// Errors no `pcall` in the plugin catches (those the run reports), at the failing
    /// line before the stack unwinds.
    case uncaught
}

/// One editor's session over the Debug Adapter Protocol: reads its requests in order
/// and answers each, as the protocol's `initialize` → `setBreakpoints`… →
/// `configurationDone` → … → `disconnect` flow goes. A request it does not know, or
/// one whose arguments are wrong, gets `success: false` with a message naming the
/// request and the fix; the session goes on.
package final class DAPSession: @unchecked Sendable {
    private let connection: any DAPChannel
    private let target: any DebugTarget
    private let lock = NSLock()
    private var seq = 0
    /// How the editor counts (`initialize`): lines and columns from 1 or from 0, and paths as
    /// paths or as `file://` URIs. Read and set on the session's thread only.
    private var firstLine = 1, firstColumn = 1
    private var uris = false

    package init(connection: any DAPChannel, target: any DebugTarget) {
        self.connection = connection
        self.target = target
    }

    /// Serves requests until the editor disconnects or closes the connection, or the
    /// framing breaks (then `log` gets why). Detaches from the target on the way out.
    package func run(log: (String) -> Void = { _ in }) {
        defer {
            target.detach()
            connection.close()
        }
        while true {
            let message: LuaValue?
            do { message = try connection.receive() } catch {
                log("debugger: \(error); the connection is closed")
                return
            }
            guard let message else { return }
            guard message["type"]?.stringValue == "request" else { continue }
            if !handle(message) { return }
        }
    }

    /// Answers an editor that cannot be served (another is attached): its first request is
    /// refused with `reason`, and the connection closed.
    package static func turnAway(_ connection: any DAPChannel, because reason: String) {
        if let request = try? connection.receive(), request["type"]?.stringValue == "request" {
            try? connection.send([
                "type": "response", "seq": 1, "request_seq": request["seq"] ?? 0, "success": false,
                "command": request["command"] ?? "", "message": LuaValue(reason),
            ])
        }
        connection.close()
    }

    /// Sends an event (`stopped`, `output`, …) from any thread.
    package func send(event: String, body: LuaValue? = nil) {
        var message: [String: LuaValue] = ["type": "event", "event": LuaValue(event)]
        if let body { message["body"] = body }
        write(message)
    }

    /// Answers one request; false when the session is over.
    private func handle(_ request: LuaValue) -> Bool {
        let command = request["command"]?.stringValue ?? ""
        let arguments = request["arguments"] ?? LuaValue([String: LuaValue]())
        switch command {
        case "initialize":
            firstLine = arguments["linesStartAt1"]?.boolValue == false ? 0 : 1
            firstColumn = arguments["columnsStartAt1"]?.boolValue == false ? 0 : 1
            uris = arguments["pathFormat"]?.stringValue == "uri"
            respond(to: request, body: Self.capabilities)
            send(event: "initialized")
        case "launch", "attach":
            respond(to: request)
        case "setBreakpoints":
            guard let given = arguments["source"]?["path"]?.stringValue, let path = self.path(given) else {
                refuse(request, "setBreakpoints needs arguments.source.path, the file's path"
                    + (uris ? " (a file:// URI, as initialize's pathFormat said)" : ""))
                return true
            }
            let requested = Self.list(arguments["breakpoints"]).compactMap { entry -> BreakpointRequest? in
                guard let line = entry["line"]?.intValue.map(Int.init) else { return nil }
                return BreakpointRequest(line: line - firstLine + 1, condition: entry["condition"]?.stringValue,
                                         hitCondition: entry["hitCondition"]?.stringValue,
                                         logMessage: entry["logMessage"]?.stringValue)
            }
            let placed = target.setBreakpoints(path: path, requested)
            let answers = placed.map { placed -> LuaValue in
                var entry: [String: LuaValue] = ["verified": LuaValue(placed.line != nil)]
                if let line = placed.line { entry["line"] = LuaValue(line + firstLine - 1) }
                if let message = placed.message { entry["message"] = LuaValue(message) }
                return LuaValue(entry)
            }
            respond(to: request, body: ["breakpoints": LuaValue(answers)])
        case "setExceptionBreakpoints":
            var filters = Set<ExceptionFilter>()
            for name in Self.list(arguments["filters"]).compactMap(\.stringValue) {
                guard let filter = ExceptionFilter(rawValue: name) else {
                    refuse(request, "no exception filter \"\(name)\"; the filters are: "
                        + ExceptionFilter.allCases.map(\.rawValue).joined(separator: ", "))
                    return true
                }
                filters.insert(filter)
            }
            target.setExceptionFilters(filters)
            respond(to: request)
        case "configurationDone":
            // Applied before the answer: an editor that reads it may count on it.
            target.configurationDone()
            respond(to: request)
        case "threads":
            let threads = target.threads().map { LuaValue(["id": LuaValue($0.id), "name": LuaValue($0.name)]) }
            respond(to: request, body: ["threads": LuaValue(threads)])
        case "stackTrace":
            guard let frames = target.stackTrace() else { return notStopped(request) }
            switch frames {
            case .success(let frames):
                // The page asked for (startFrame, levels: 0 or none for all); ids count from the innermost.
                let start = min(max(Int(arguments["startFrame"]?.intValue ?? 0), 0), frames.count)
                let levels = Int(arguments["levels"]?.intValue ?? 0)
                let page = frames.enumerated().dropFirst(start).prefix(levels > 0 ? levels : frames.count)
                let shown = page.map { index, frame -> LuaValue in
                    var entry: [String: LuaValue] = [
                        "id": LuaValue(index + 1), "name": LuaValue(Self.frameName(frame)),
                        "line": LuaValue((frame.line ?? 1) + firstLine - 1), "column": LuaValue(firstColumn),
                    ]
                    // Absolute, as an editor opens files: a chunk named relative to where the run started.
                    let file = URL(fileURLWithPath: frame.source).standardizedFileURL
                    let path = uris ? file.absoluteString : file.path
                    if frame.what != "C" { entry["source"] = ["path": LuaValue(path), "name": LuaValue(Self.fileName(frame.source))] }
                    else { entry["presentationHint"] = "subtle" }
                    return LuaValue(entry)
                }
                respond(to: request, body: ["stackFrames": LuaValue(shown), "totalFrames": LuaValue(frames.count)])
            case .failure(let error): refuse(request, "\(error)")
            }
        case "scopes":
            guard let frame = arguments["frameId"]?.intValue.map(Int.init) else {
                refuse(request, "scopes needs arguments.frameId, from stackTrace")
                return true
            }
            let scopes = DebugController.scopes(frame: frame).map {
                LuaValue(["name": LuaValue($0.name), "variablesReference": LuaValue($0.reference), "expensive": false])
            }
            respond(to: request, body: ["scopes": LuaValue(scopes)])
        case "variables":
            guard let reference = arguments["variablesReference"]?.intValue.map(Int.init) else {
                refuse(request, "variables needs arguments.variablesReference, from scopes or variables")
                return true
            }
            guard let listed = target.variables(reference) else { return notStopped(request) }
            switch listed {
            case .success(let variables):
                respond(to: request, body: ["variables": LuaValue(variables.map(Self.shown))])
            case .failure(let error): refuse(request, "\(error)")
            }
        case "evaluate":
            guard let expression = arguments["expression"]?.stringValue else {
                refuse(request, "evaluate needs arguments.expression")
                return true
            }
            let frame = arguments["frameId"]?.intValue.map(Int.init) ?? 1
            guard let value = target.evaluate(expression, frame: frame) else { return notStopped(request) }
            switch value {
            case .success(let value):
                respond(to: request, body: ["result": LuaValue(value.text), "type": LuaValue(value.type),
                                            "variablesReference": LuaValue(value.ref ?? 0)])
            case .failure(let error): refuse(request, "\(error)")
            }
        case "continue":
            guard target.resume(.run) else { return notStopped(request) }
            respond(to: request, body: ["allThreadsContinued": true])
        case "next", "stepIn", "stepOut":
            let mode: LuaResume = command == "next" ? .stepOver : command == "stepIn" ? .stepIn : .stepOut
            guard target.resume(mode) else { return notStopped(request) }
            respond(to: request)
        case "pause":
            target.pause()
            respond(to: request)
        case "disconnect":
            respond(to: request)
            return false
        case "":
            refuse(request, "a request needs a \"command\"")
        default:
            refuse(request, "\(command) is not supported by Moonflow's debugger (docs/debugging.md lists what is)")
        }
        return true
    }

    /// A read or a continue while the run is not stopped: refused, the session goes on.
    private func notStopped(_ request: LuaValue) -> Bool {
        refuse(request, "\(request["command"]?.stringValue ?? "?") needs a stopped thread; the run is not stopped")
        return true
    }

    private static func shown(_ variable: LuaVariable) -> LuaValue {
        ["name": LuaValue(variable.name), "value": LuaValue(variable.text), "type": LuaValue(variable.type),
         "variablesReference": LuaValue(variable.ref ?? 0)]
    }

    /// As its caller named it (`reduce`); one called from C (by `pcall`, a coroutine) has no
    /// name, and shows where it starts: `function <init.lua:2>`.
    private static func frameName(_ frame: LuaFrame) -> String {
        if let name = frame.name { return name }
        if frame.what == "main" { return "main chunk" }
        guard let line = frame.lineDefined else { return "?" }
        return "function <\(fileName(frame.source)):\(line)>"
    }

    private static func fileName(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    /// What the editor may ask (`initialize`'s answer).
    private static let capabilities: LuaValue = [
        "supportsConfigurationDoneRequest": true,
        "supportsConditionalBreakpoints": true,
        "supportsHitConditionalBreakpoints": true,
        "supportsLogPoints": true,
        "exceptionBreakpointFilters": LuaValue([
            ["filter": "all", "label": "Any error, caught or not", "default": false],
            ["filter": "uncaught", "label": "Errors no handler catches", "default": false],
        ]),
    ]

    private func respond(to request: LuaValue, body: LuaValue? = nil) {
        var message: [String: LuaValue] = [
            "type": "response", "request_seq": request["seq"] ?? 0, "success": true,
            "command": request["command"] ?? "",
        ]
        if let body { message["body"] = body }
        write(message)
    }

    private func refuse(_ request: LuaValue, _ why: String) {
        write([
            "type": "response", "request_seq": request["seq"] ?? 0, "success": false,
            "command": request["command"] ?? "", "message": LuaValue(why),
        ])
    }

    private func write(_ fields: [String: LuaValue]) {
        lock.withLock {
            seq += 1
            var message = fields
            message["seq"] = LuaValue(seq)
            // A closed connection ends `run` through `receive`; nothing to do here.
            try? connection.send(LuaValue(message))
        }
    }

    /// A JSON array's items (none for anything else).
    /// A file's path as the editor gave it: a path, or a `file://` URI when it said so.
    private func path(_ given: String) -> String? {
        guard uris else { return given }
        guard let url = URL(string: given), url.isFileURL else { return nil }
        return url.path
    }

    private static func list(_ value: LuaValue?) -> [LuaValue] {
        guard let value, case .table(let table) = value else { return [] }
        return table.array
    }
}
