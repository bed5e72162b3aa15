import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua

/// One event of a run as a JSON object: the line `moonflow run --format jsonl` and `moonflow
/// serve --format jsonl` print and a recording keeps, and, behind the frame's own `seq` and
/// `cause`, an inspector frame. The one place that names and orders its members:
///
///     {"event":"state","t":T,"seq":N[,"from":CHILD],"state":{...}}   or "patch":[...]
///     {"event":"action","t":T,"action":{...}}
///     {"event":"action","t":T,"to":CHILD,"react":{"from":CHILD,"effect":{...}},"action":{...}}
///     {"event":"mutation","t":T,"seq":N[,"from":CHILD],"mutation":{...}}
///     {"event":"effect","t":T[,"from":CHILD],"effect":{...}}
///     {"event":"internal","t":T[,"from":CHILD],"effect":{...}}
///     {"event":"call","t":T,"service":"drafts:put","call":N}
///     {"event":"invariant","t":T,"seq":N,"invariant":NAME[,"reason":R][,"action":{...}]}
///     {"event":"cancelled","t":T[,"from":CHILD],"id":ID[,"by":{...}]}
///     {"event":"error"|"log","t":T,"message":M[,"where":W][,"traceback":TB]}
///     {"event":"reload","t":T,"files":[...],"ms":1.5[,"added":[...],...][,"restarted":true]}
///
/// and the lines of the executables themselves: `inspector`, `serve`, `debugger`, and
/// `serve`'s own `log`.
package enum EventLine {
    /// What a `state` event carries.
    package enum State {
        /// The whole state, encoded here (keys sorted, errors naming `state`).
        case value(LuaValue)
        /// The whole state, JSON already (`LuaFeature.stateJSON`).
        case json([UInt8])
        /// The whole state, JSON text already (an inspector's snapshot).
        case jsonText(String)
        /// A JSON Patch against the state before, JSON already.
        case patch(String)
    }

    /// The line of `event` at `t` ms.
    /// - Parameters:
    ///   - head: members that go before `event` (an inspector frame's `seq` and `cause`).
    ///   - from: under `mf.compose`, the child a mutation or state came from.
    ///   - state: what a `state` event carries (nil: its whole state, encoded here).
    ///   - step: the name of a state's or mutation's count of reduced mutations: `seq` in
    ///     jsonl; `step` in the inspector's frames, whose `seq` numbers the frames.
    /// - Returns: the line; when the event cannot be written (a NaN in an action, say), an
    ///   `error` line saying why, at the same `t` and behind the same `head`.
    package static func text(
        _ event: FeatureEvent, t: Int, head: JSONObjectWriter = JSONObjectWriter(), from: String? = nil,
        state: (() throws -> State)? = nil, step: String = "seq"
    ) -> String {
        var line = head
        do {
            try write(event, t: t, into: &line, from: from, state: state, step: step)
            return line.text
        } catch {
            var line = head
            line.add("event", "error")
            line.add("t", t)
            line.add("message", String(describing: error))
            return line.text
        }
    }

    private static func write(
        _ event: FeatureEvent, t: Int, into line: inout JSONObjectWriter, from child: String?,
        state: (() throws -> State)?, step: String
    ) throws {
        switch event {
        case .state(let s, let seq):
            line.add("event", "state")
            line.add("t", t)
            line.add(step, seq)
            if let child { line.add("from", child) }
            switch try state?() ?? .value(s) {
            case .value(let v): try line.add("state", v, root: "state")
            case .json(let bytes): line.add("state", raw: bytes)
            case .jsonText(let text): line.add("state", raw: text)
            case .patch(let ops): line.add("patch", raw: ops)
            }
        case .action(let a):
            line.add("event", "action")
            line.add("t", t)
            try line.add("action", a, root: "action")
        case .reaction(let a, let to, let from, let effect):
            // An `mf.compose`'s `react`: the action went to child `to`, for child `from`'s effect.
            line.add("event", "action")
            line.add("t", t)
            line.add("to", to)
            var cause = JSONObjectWriter()
            cause.add("from", from)
            try cause.add("effect", effect, root: "effect")
            line.add("react", cause)
            try line.add("action", a, root: "action")
        case .mutation(let m, let seq):
            line.add("event", "mutation")
            line.add("t", t)
            line.add(step, seq)
            if let child { line.add("from", child) }
            try line.add("mutation", m, root: "mutation")
        case .effect(let e, let from):
            line.add("event", "effect")
            line.add("t", t)
            if let from { line.add("from", from) }
            try line.add("effect", e, root: "effect")
        case .internalEffect(let e, let from):
            line.add("event", "internal")
            line.add("t", t)
            if let from { line.add("from", from) }
            try line.add("effect", e, root: "effect")
        case .call(let service, let call):
            line.add("event", "call")
            line.add("t", t)
            line.add("service", service)
            line.add("call", call)
        case .invariant(let name, let seq, let action, let reason):
            line.add("event", "invariant")
            line.add("t", t)
            line.add(step, seq)
            line.add("invariant", name)
            if let reason { line.add("reason", reason) }
            if let action { try line.add("action", action, root: "action") }
        case .cancelled(let id, let cause, let from):
            // `env.cancel(id)` stopped the streams marked with `id`; `by` is the action that did
            // (not `cause`: an inspector frame's head has a `cause` of its own).
            line.add("event", "cancelled")
            line.add("t", t)
            if let from { line.add("from", from) }
            line.add("id", id)
            if let cause { try line.add("by", cause, root: "by") }
        case .error(let message, let location), .log(let message, let location):
            let report = LuaErrorReport(parsing: message)
            line.add("event", { if case .error = event { "error" } else { "log" } }())
            line.add("t", t)
            line.add("message", report.message)
            if let location { line.add("where", location) }
            if let traceback = report.traceback { line.add("traceback", traceback) }
        case .reload(let files, let ms, let changes):
            line.add("event", "reload")
            line.add("t", t)
            line.add("files", files)
            line.add("ms", raw: String(format: "%.1f", ms))
            for (name, items) in [
                ("added", changes.added), ("stale", changes.stale), ("kept", changes.kept),
                ("cancelled", changes.cancelled),
            ]
            where !items.isEmpty {
                line.add(name, items)
            }
            if changes.restarted { line.add("restarted", true) }
        }
    }

    /// Where the inspector serves (`run --inspect`; `serve` names the app and feature).
    package static func inspector(url: String, app: String? = nil, feature: String? = nil) -> String {
        var line = head("inspector")
        line.add("url", url)
        if let app { line.add("app", app) }
        if let feature { line.add("feature", feature) }
        return line.text
    }

    /// Where `moonflow serve` serves, its plugin folders, and the line an app connects with.
    package static func serve(url: String, plugins: [String], connect: String) -> String {
        var line = head("serve")
        line.add("url", url)
        line.add("plugins", plugins)
        line.add("connect", connect)
        return line.text
    }

    /// Where editors attach (`serve --debug`), the token, and the file that holds it.
    package static func debugger(address: String, token: String, tokenFile: String?) -> String {
        var line = head("debugger")
        line.add("address", address)
        line.add("token", token)
        if let tokenFile { line.add("tokenFile", tokenFile) }
        return line.text
    }

    /// A `log` line of the executable's own (an app came or went), its text as it is.
    package static func log(_ message: String) -> String {
        var line = head("log")
        line.add("message", message)
        return line.text
    }

    private static func head(_ kind: String) -> JSONObjectWriter {
        var line = JSONObjectWriter()
        line.add("event", kind)
        line.add("t", 0)
        return line
    }

    /// The `event` member of a printed line, read by parsing it (nil: not an event line).
    package static func kind(of line: LuaValue) -> String? {
        line["event"]?.stringValue
    }
}

/// The lines of a recording (`moonflow run --record`) besides its events, which are
/// `EventLine`s with whole states:
///
///     {"record":"moonflow-session","format":1,"feature":N,"version":V,"path":P,"clock":C,"moonflow":"0.1.0","effects":true[,"seed":S]}
///     {"input":{...},"t":T}
///     {"service":"users:getAll","call":1,"values":[...][,"error":E][,"after":A,"t":T[,"n":N]]}
///     {"read":"time","value":1767225600}
package enum RecordingLine {
    /// The header's `record` value: what `replay` looks for on the first line.
    package static let kind = "moonflow-session"
    /// The header's `format`: bumped when the layout of a recording changes.
    package static let format = 1

    /// The first line: the feature, its state-shape version and how it ran (with the seed of
    /// its random numbers when the replay needs it: `FeatureInputs`).
    /// - Parameter effects: the run reports `internal`, `call` and `invariant` events (as
    ///   `moonflow run` does; `serve`'s apps report none of the last two).
    package static func header(_ run: RunDescription, effects: Bool = true, seed: Int64? = nil) -> String {
        var line = JSONObjectWriter()
        line.add("record", kind)
        line.add("format", format)
        line.add("feature", run.name)
        line.add("version", run.version)
        line.add("path", run.path)
        line.add("clock", run.clock.rawValue)
        line.add("moonflow", FeatureHost.version)
        // Its events include `internal`, `call` and `invariant` ones: a replay compares them
        // (a recording without this was made before they were events, and leaves them out).
        if effects { line.add("effects", true) }
        if let seed { line.add("seed", seed) }
        return line.text
    }

    /// An action sent, at `t` ms.
    package static func input(_ action: LuaValue, t: Int) -> String {
        var line = JSONObjectWriter()
        line.add("input", action, root: "action", otherwise: "{}")
        line.add("t", t)
        return line.text
    }

    /// A value of time the plugins read on the real clock (`FeatureInputs`): `kind` is `time`,
    /// `clock` or `now`; replay hands each kind's back in order.
    package static func read(_ kind: String, value: LuaValue) -> String {
        var line = JSONObjectWriter()
        line.add("read", kind)
        line.add("value", value, root: "value", otherwise: "null")
        return line.text
    }

    /// What a service call answered, and where in the run the answer arrived, when known.
    package static func service(
        _ service: String, call: Int, values: [LuaValue], error: String?, arrived: ServiceDelivery?
    ) -> String {
        var line = JSONObjectWriter()
        line.add("service", service)
        line.add("call", call)
        line.add("values", .table(LuaTable(array: values, isJSONArray: true)), root: "values", otherwise: "[]")
        if let error { line.add("error", error) }
        if let arrived {
            line.add("after", arrived.after)
            line.add("t", arrived.t)
            if let n = arrived.order { line.add("n", n) }
        }
        return line.text
    }
}

/// A timed input line of `moonflow run` (`docs/cli.md`): `{"at":T,"send":{...}}` sends the
/// action at `T` ms on the run's clock. What `replay` and the inspector's `rerun` feed a run.
package enum TimedInput {
    /// `action` is JSON already.
    package static func line(at t: Int, send action: String) -> String {
        var line = JSONObjectWriter()
        line.add("at", t)
        line.add("send", raw: action)
        return line.text
    }

    package static func line(at t: Int, send action: LuaValue, root: String) -> String {
        var line = JSONObjectWriter()
        line.add("at", t)
        line.add("send", action, root: root, otherwise: "{}")
        return line.text
    }
}
