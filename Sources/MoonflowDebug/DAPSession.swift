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
    /// Goes back from the stop (`stepBack`, `reverseContinue`); nil when nothing is stopped,
    /// a failure saying why the run cannot go back.
    func reverse(_ kind: DebugTravel.Kind) -> Result<Void, DebugTravel.Refusal>?
    /// Whether the run can go back (and so restart a frame).
    var canGoBack: Bool { get }
}

extension DebugTarget {
    package var canGoBack: Bool { false }

    /// A target that cannot go back says so, and how to get a run that can.
    package func reverse(_ kind: DebugTravel.Kind) -> Result<Void, DebugTravel.Refusal>? {
        .failure(
            DebugTravel.Refusal(
                description: "\(kind.request) \(DebugTravel.notRepeatable)"))
    }
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
    /// The id the editor knows it by (`setBreakpoints`' answer, `stopped`'s `hitBreakpointIds`).
    package let id: Int?
    package init(
        line: Int, condition: String? = nil, hitCondition: String? = nil, logMessage: String? = nil, id: Int? = nil
    ) {
        self.line = line
        self.id = id
        self.condition = condition
        self.hitCondition = hitCondition
        self.logMessage = logMessage
    }
}

/// Where a breakpoint landed, or why it did not, and its id.
package struct PlacedBreakpoint: Equatable, Sendable {
    package let line: Int?
    package let message: String?
    package let id: Int?
    package init(line: Int?, message: String? = nil, id: Int? = nil) {
        self.line = line; self.message = message; self.id = id
    }
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
/// and answers each, as the protocol's `initialize` → `attach` → `setBreakpoints`… →
/// `configurationDone` → … → `disconnect` flow goes. Nothing but `initialize` is served
/// until `attach` (or `launch`) gives the debugger's token (`DAPGate`); a connection that
/// asks anything else first, or gives a wrong token, is refused and closed, and the run
/// is not touched. A request it does not know, or one whose arguments are wrong (a number
/// out of its range among them), gets `success: false` with a message naming the request
/// and the fix; the session goes on.
///
/// What it sends goes through a `DAPOutbox`: a feature that stops, or prints a log point,
/// never waits on the editor's socket. Each request is handled under `order`, which a
/// `stopped` event also takes: a stop that a request brings about (a `continue`, a step,
/// `pause`, `configurationDone`) is told after that request's response.
package final class DAPSession: @unchecked Sendable {
    private let connection: any DAPChannel
    private let target: any DebugTarget
    private let outbox: DAPOutbox
    private let order = NSLock()
    /// Read and changed on the session's thread only.
    private var gate: DAPGate
    /// What becomes of the editor once it has given the token (the controller attaches it).
    private let admitted: @Sendable (DAPSession) -> Void
    /// How the editor counts (`initialize`): lines and columns from 1 or from 0, and paths as
    /// paths or as `file://` URIs. Read and set on the session's thread only.
    private var firstLine = 1, firstColumn = 1
    private var uris = false

    /// - Parameters:
    ///   - access: the token the editor must give; nil for a channel trusted already (an
    ///     app's session over the dev-server link), which its owner attaches itself.
    ///   - admitted: called on the session's thread once the editor has given the token.
    package init(
        connection: any DAPChannel, target: any DebugTarget, access: DebugAccess? = nil,
        log: @escaping @Sendable (String) -> Void = { _ in },
        admitted: @escaping @Sendable (DAPSession) -> Void = { _ in }
    ) {
        self.connection = connection
        self.target = target
        self.gate = DAPGate(access)
        self.admitted = admitted
        outbox = DAPOutbox(connection, log: log)
    }

    /// Serves requests until the editor disconnects or closes the connection, the framing
    /// breaks or the gate refuses it (then `log` gets why). An admitted editor's going
    /// detaches it from the target and frees the editor slot.
    package func run(log: (String) -> Void = { _ in }) {
        defer {
            // The last answer (disconnect's) is written before the run is let go: a run that
            // then ends ends the process, and what is queued with it.
            outbox.drain()
            if gate.admitted { target.detach() }
            gate.leave()
            outbox.finish()
        }
        while true {
            let message: LuaValue?
            do { message = try connection.receive() } catch {
                log("debugger: \(error); the connection is closed")
                return
            }
            guard let message else { return }
            guard message["type"]?.stringValue == "request" else {
                if gate.admitted { continue }
                log("debugger: a connection sent a \(message["type"]?.stringValue ?? "?") before attach; it is closed")
                return
            }
            switch gate.check(message) {
            case .end(let why):
                refuse(message, why)
                log("debugger: refused a connection: \(why)")
                return
            case .admitted:
                (connection as? DAPConnection)?.markAdmitted()
                admitted(self)
            case .serve: break
            }
            if !order.withLock({ handle(message) }) { return }
        }
    }

    /// Sends an event (`stopped`, `output`, …) from any thread. An `output` event is dropped
    /// (and counted) when the editor has not read those before it; a `stopped` or
    /// `continued` waits for the response to a request being handled.
    package func send(event: String, body: LuaValue? = nil) {
        var message: [String: LuaValue] = ["type": "event", "event": LuaValue(event)]
        if let body { message["body"] = body }
        if event == "output" {
            outbox.post(message, droppable: true)
        } else {
            order.withLock { _ = outbox.post(message) }
        }
    }

    /// Answers one request; false when the session is over. Under `order`.
    private func handle(_ request: LuaValue) -> Bool {
        let command = request["command"]?.stringValue ?? ""
        let arguments = request["arguments"] ?? LuaValue([String: LuaValue]())
        do {
            return try serve(command, request, arguments)
        } catch let refusal as Refusal {
            refuse(request, refusal.why)
            return true
        } catch {
            refuse(request, "\(error)")
            return true
        }
    }

    private func serve(_ command: String, _ request: LuaValue, _ arguments: LuaValue) throws -> Bool {
        switch command {
        case "initialize":
            firstLine = arguments["linesStartAt1"]?.boolValue == false ? 0 : 1
            firstColumn = arguments["columnsStartAt1"]?.boolValue == false ? 0 : 1
            uris = arguments["pathFormat"]?.stringValue == "uri"
            respond(to: request, body: Self.capabilities)
        case "launch", "attach":
            // Configuration requests are taken from here on: the editor has given the token.
            respond(to: request)
            outbox.post(["type": "event", "event": "initialized"])
        case "setBreakpoints":
            guard let given = arguments["source"]?["path"]?.stringValue, let path = self.path(given) else {
                throw Refusal(
                    "setBreakpoints needs arguments.source.path, the file's path"
                        + (uris ? " (a file:// URI, as initialize's pathFormat said)" : ""))
            }
            // A line the editor counts from `firstLine`, up to the largest a chunk can have.
            let lines = firstLine...(Int(Int32.max) - 1 + firstLine)
            let entries = Self.list(arguments["breakpoints"])
            guard entries.count <= Self.maxBreakpoints else {
                throw Refusal(
                    "setBreakpoints takes at most \(Self.maxBreakpoints) breakpoints a file; it was given \(entries.count)"
                )
            }
            let requested = try entries.enumerated().map { index, entry -> BreakpointRequest in
                let line = try Self.integer(entry, "line", in: lines, "setBreakpoints' breakpoints[\(index)]")!
                return BreakpointRequest(
                    line: line - firstLine + 1, condition: entry["condition"]?.stringValue,
                    hitCondition: entry["hitCondition"]?.stringValue,
                    logMessage: entry["logMessage"]?.stringValue)
            }
            let placed = target.setBreakpoints(path: path, requested)
            let answers = placed.map { placed -> LuaValue in
                var entry: [String: LuaValue] = ["verified": LuaValue(placed.line != nil)]
                if let id = placed.id { entry["id"] = LuaValue(id) }
                if let line = placed.line { entry["line"] = LuaValue(line + firstLine - 1) }
                if let message = placed.message { entry["message"] = LuaValue(message) }
                return LuaValue(entry)
            }
            respond(to: request, body: ["breakpoints": LuaValue(answers)])
        case "setExceptionBreakpoints":
            var filters = Set<ExceptionFilter>()
            for name in Self.list(arguments["filters"]).compactMap(\.stringValue) {
                guard let filter = ExceptionFilter(rawValue: name) else {
                    throw Refusal(
                        "no exception filter \"\(name)\"; the filters are: "
                            + ExceptionFilter.allCases.map(\.rawValue).joined(separator: ", "))
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
            // The page asked for (startFrame, levels: 0 or none for all); ids count from the innermost.
            let start = try Self.integer(arguments, "startFrame", in: 0...Int(Int32.max), "stackTrace") ?? 0
            let levels = try Self.integer(arguments, "levels", in: 0...Int(Int32.max), "stackTrace") ?? 0
            guard let frames = target.stackTrace() else { return notStopped(request) }
            let page = try frames.get().enumerated().dropFirst(start).prefix(levels > 0 ? levels : Int(Int32.max))
            let restarts = LuaValue.boolean(target.canGoBack)
            let shown = page.map { index, frame -> LuaValue in
                var entry: [String: LuaValue] = [
                    "id": LuaValue(index + 1), "name": LuaValue(Self.frameName(frame)),
                    "line": LuaValue((frame.line ?? 1) + firstLine - 1), "column": LuaValue(firstColumn),
                    "canRestart": restarts,
                ]
                // Absolute, as an editor opens files: a chunk named relative to where the run started.
                let file = URL(fileURLWithPath: frame.source).standardizedFileURL
                let path = uris ? file.absoluteString : file.path
                if frame.what != "C" {
                    entry["source"] = ["path": LuaValue(path), "name": LuaValue(Self.fileName(frame.source))]
                } else {
                    entry["presentationHint"] = "subtle"
                }
                return LuaValue(entry)
            }
            respond(
                to: request, body: ["stackFrames": LuaValue(shown), "totalFrames": LuaValue(try frames.get().count)])
        case "scopes":
            let frame = try Self.integer(arguments, "frameId", in: Self.frameIDs, "scopes", fix: "from stackTrace")!
            let scopes = DebugController.scopes(frame: frame).map {
                LuaValue(["name": LuaValue($0.name), "variablesReference": LuaValue($0.reference), "expensive": false])
            }
            respond(to: request, body: ["scopes": LuaValue(scopes)])
        case "variables":
            let reference = try Self.integer(
                arguments, "variablesReference", in: 1...Int(Int32.max), "variables",
                fix: "from scopes or variables")!
            guard let listed = target.variables(reference) else { return notStopped(request) }
            respond(to: request, body: ["variables": LuaValue(try listed.get().map(Self.shown))])
        case "evaluate":
            guard let expression = arguments["expression"]?.stringValue else {
                throw Refusal("evaluate needs arguments.expression")
            }
            let frame =
                try Self.integer(arguments, "frameId", in: Self.frameIDs, "evaluate", fix: "from stackTrace") ?? 1
            guard let value = target.evaluate(expression, frame: frame) else { return notStopped(request) }
            let shown = try value.get()
            respond(
                to: request,
                body: [
                    "result": LuaValue(shown.text), "type": LuaValue(shown.type),
                    "variablesReference": LuaValue(shown.ref ?? 0),
                ])
        case "continue":
            guard target.resume(.run) else { return notStopped(request) }
            respond(to: request, body: ["allThreadsContinued": true])
        case "next", "stepIn", "stepOut":
            let mode: LuaResume = command == "next" ? .stepOver : command == "stepIn" ? .stepIn : .stepOut
            guard target.resume(mode) else { return notStopped(request) }
            respond(to: request)
        case "stepBack", "reverseContinue":
            guard let gone = target.reverse(command == "stepBack" ? .stepBack : .reverseContinue) else {
                return notStopped(request)
            }
            if case .failure(let refusal) = gone { throw Refusal(refusal.description) }
            respond(to: request)
        case "restartFrame":
            let frame = try Self.integer(
                arguments, "frameId", in: Self.frameIDs, "restartFrame", fix: "from stackTrace")!
            guard let gone = target.reverse(.restartFrame(frame)) else { return notStopped(request) }
            if case .failure(let refusal) = gone { throw Refusal(refusal.description) }
            respond(to: request)
        case "pause":
            target.pause()
            respond(to: request)
        case "disconnect":
            respond(to: request)
            return false
        case "":
            throw Refusal("a request needs a \"command\"")
        default:
            throw Refusal("\(command) is not supported by Moonflow's debugger (docs/debugging.md lists what is)")
        }
        return true
    }

    /// The most breakpoints one file may have (each is placed against every line with code).
    static let maxBreakpoints = 10_000

    /// The ids `stackTrace` gives frames (1 the innermost), as far as any stack goes.
    private static let frameIDs = 1...100_000

    /// The integer argument `name` of `arguments`, checked against `range` before any
    /// arithmetic is done with it; nil when it is absent and `fix` is nil (it is optional).
    /// - Throws: `Refusal` naming the request, the argument, the range and the value.
    private static func integer(
        _ arguments: LuaValue, _ name: String, in range: ClosedRange<Int>, _ request: String,
        fix: String? = nil
    ) throws(Refusal) -> Int? {
        guard let value = arguments[name], !value.isNil else {
            guard let fix else { return nil }
            throw Refusal("\(request) needs arguments.\(name), \(fix)")
        }
        guard let n = value.intValue, let int = Int(exactly: n), range.contains(int) else {
            throw Refusal(
                "\(request)'s \(name) must be an integer from \(range.lowerBound) to \(range.upperBound); it was \((try? value.json()) ?? "?")"
            )
        }
        return int
    }

    /// Why a request is refused, thrown while it is served.
    private struct Refusal: Error {
        let why: String
        init(_ why: String) { self.why = why }
    }

    /// A read or a continue while the run is not stopped: refused, the session goes on.
    private func notStopped(_ request: LuaValue) -> Bool {
        refuse(request, "\(request["command"]?.stringValue ?? "?") needs a stopped thread; the run is not stopped")
        return true
    }

    private static func shown(_ variable: LuaVariable) -> LuaValue {
        [
            "name": LuaValue(variable.name), "value": LuaValue(variable.text), "type": LuaValue(variable.type),
            "variablesReference": LuaValue(variable.ref ?? 0),
        ]
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

    /// What the editor may ask (`initialize`'s answer), each honoured.
    package static let capabilities: LuaValue = [
        "supportsConfigurationDoneRequest": true,
        "supportsConditionalBreakpoints": true,
        "supportsHitConditionalBreakpoints": true,
        "supportsLogPoints": true,
        "supportsDelayedStackTraceLoading": true,
        "supportsStepBack": true,
        "supportsRestartFrame": true,
        "exceptionBreakpointFilters": LuaValue([
            ["filter": "all", "label": "Any error, caught or not", "default": false],
            ["filter": "uncaught", "label": "Errors no handler catches", "default": false],
        ]),
    ]

    private func respond(to request: LuaValue, body: LuaValue? = nil) {
        var message: [String: LuaValue] = [
            "type": "response", "request_seq": Self.requestSeq(request), "success": true,
            "command": LuaValue(request["command"]?.stringValue ?? ""),
        ]
        if let body { message["body"] = body }
        outbox.post(message)
    }

    /// An error response: the message, and the `body.error` the protocol's ErrorResponse has.
    private func refuse(_ request: LuaValue, _ why: String) { outbox.post(Self.errorResponse(to: request, why)) }

    /// The fields of an error response to `request` (numbered by whoever sends it): the
    /// message, and the `body.error` the protocol's ErrorResponse has. The relay's too.
    package static func errorResponse(to request: LuaValue, _ why: String) -> [String: LuaValue] {
        [
            "type": "response", "request_seq": requestSeq(request), "success": false,
            "command": LuaValue(request["command"]?.stringValue ?? ""), "message": LuaValue(why),
            "body": ["error": ["id": 1, "format": LuaValue(why), "showUser": true]],
        ]
    }

    /// The request's `seq` as a response names it (0 when it had none that is an integer).
    private static func requestSeq(_ request: LuaValue) -> LuaValue {
        request["seq"]?.intValue.map(LuaValue.integer) ?? 0
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
