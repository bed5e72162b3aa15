import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowLua

/// `moonflow run --record FILE`: writes the session as JSON Lines, to be
/// re-run by `moonflow replay FILE`.
///
///     {"record":"moonflow-session","format":1,"feature":"counter","version":1,"path":"plugins/counter","clock":"virtual","moonflow":"0.1.0"}
///     {"input":{"type":"increment"},"t":0}
///     {"event":"action","t":0,"action":{"type":"increment"}}
///     {"event":"state","t":0,"seq":1,"state":{"count":1}}
///
/// The first line names the feature, its state-shape version and how it ran;
/// `input` lines are every action sent, with its time on the run's clock;
/// `service` lines what each call of a Swift service or repository answered
/// (replay answers from them); the other lines are the run's jsonl events with
/// whole states.
package final class SessionRecorder: RunObserver, @unchecked Sendable {
    /// The header's `record` value: what `replay` looks for on the first line.
    package static let kind = "moonflow-session"
    /// The header's `format`: bumped when the layout of a recording changes.
    package static let format = 1

    private let handle: FileHandle
    private let printer = EventPrinter(format: .jsonl)
    private let lock = NSLock()

    /// Creates (or truncates) `path`.
    /// - Throws: `HostError` naming the file when it cannot be written.
    package init(path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
            throw HostError("cannot write the recording \(path): check that its folder exists and is writable")
        }
        self.handle = handle
    }

    deinit { try? handle.close() }

    /// The header line for a run of `run`.
    package static func header(_ run: RunDescription) -> String {
        func q(_ s: String) -> String { (try? LuaValue.string(LuaString(s)).json()) ?? "\"\"" }
        return "{\"record\":\(q(kind)),\"format\":\(format),\"feature\":\(q(run.name)),\"version\":\(run.version),"
            + "\"path\":\(q(run.path)),\"clock\":\(q(run.clock.rawValue)),\"moonflow\":\(q(FeatureHost.version))}"
    }

    /// An `input` line.
    package static func inputLine(_ action: LuaValue, t: Int) -> String {
        let json = (try? action.json(sortedKeys: true, root: "action")) ?? "{}"
        return "{\"input\":\(json),\"t\":\(t)}"
    }

    package func started(_ run: RunDescription, dispatch: any RunDispatcher) { write(SessionRecorder.header(run)) }

    package func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?) {
        write(lock.withLock { printer.render(event, t: t) })
    }

    package func input(_ action: LuaValue, t: Int) { write(SessionRecorder.inputLine(action, t: t)) }

    /// The tap that writes a `service` line for every Swift service or repository call once it ends:
    /// `{"service":"users:getAll","call":1,"values":[...],"error":"..."}`.
    package var serviceTap: ServiceTap {
        ServiceTap(recording: { [weak self] service, call, outcome in
            self?.write(SessionRecorder.serviceLine(service, call: call, outcome))
        })
    }

    static func serviceLine(_ service: String, call: Int, _ outcome: ServiceOutcome) -> String {
        func q(_ s: String) -> String { (try? LuaValue.string(LuaString(s)).json()) ?? "\"\"" }
        let values = (try? LuaValue.table(LuaTable(array: outcome.values, isJSONArray: true)).json(sortedKeys: true, root: "values")) ?? "[]"
        let error = outcome.error.map { ",\"error\":\(q($0))" } ?? ""
        return "{\"service\":\(q(service)),\"call\":\(call),\"values\":\(values)\(error)}"
    }

    private func write(_ line: String) {
        lock.withLock { handle.write(Data((line + "\n").utf8)) }
    }
}
