import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowLua
import Streams

/// `moonflow run --record FILE`: writes the session as JSON Lines, to be
/// re-run by `moonflow replay FILE`.
///
///     {"record":"moonflow-session","format":1,"feature":"counter","version":1,"path":"plugins/counter","clock":"virtual","moonflow":"0.1.0"}
///     {"input":{"type":"increment"},"t":0}
///     {"event":"action","t":0,"action":{"type":"increment"}}
///     {"event":"state","t":0,"seq":1,"state":{"count":1}}
///
/// The first line names the feature, its state-shape version and how it ran;
/// `input` lines are every action sent (and accepted), with its time on the run's clock;
/// `service` lines what each call of a Swift service or repository answered and where
/// in the run the answer arrived (`after` the run's Nth action event, at `t` ms), so
/// replay answers each call at that point; the other lines are the run's jsonl events
/// with whole states.
package final class SessionRecorder: RunObserver, @unchecked Sendable {
    /// The header's `record` value: what `replay` looks for on the first line.
    package static let kind = "moonflow-session"
    /// The header's `format`: bumped when the layout of a recording changes.
    package static let format = 1

    private let handle: FileHandle
    private let printer = EventPrinter(format: .jsonl)
    private let lock = NSLock()
    /// Action events seen so far, the run's clock, and where each service call's answer
    /// first arrived (by `service#call`), all on the state executor.
    private let place = Locked<(actions: Int, now: @Sendable () -> Int, arrivals: [String: ServiceDelivery], arrived: Int)>((0, { 0 }, [:], 0))

    /// The plugin path the header names instead of the run's (`replay --update` keeps the
    /// recorded one, however `--plugins` was given).
    private let pluginPath: String?

    /// Creates (or truncates) `path`.
    /// - Throws: `HostError` naming the file when it cannot be written.
    package init(path: String, pluginPath: String? = nil) throws {
        self.pluginPath = pluginPath
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

    package func started(_ run: RunDescription, dispatch: any RunDispatcher) {
        place.withLock { $0.now = run.now }
        var described = run
        if let pluginPath {
            described = RunDescription(name: run.name, version: run.version, path: pluginPath, actions: run.actions, clock: run.clock, now: run.now)
        }
        write(SessionRecorder.header(described))
    }

    package func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?) {
        if case .action = event { place.withLock { $0.actions += 1 } }
        write(lock.withLock { printer.render(event, t: t) })
    }

    package func input(_ action: LuaValue, t: Int) { write(SessionRecorder.inputLine(action, t: t)) }

    /// The tap that writes a `service` line for every Swift service or repository call once it ends:
    /// `{"service":"users:getAll","call":1,"values":[...],"error":"..."}`.
    package var serviceTap: ServiceTap {
        let tap = ServiceTap(recording: { [weak self] service, call, outcome in
            guard let self else { return }
            let arrived = place.withLock { $0.arrivals.removeValue(forKey: "\(service)#\(call)") }
            write(SessionRecorder.serviceLine(service, call: call, outcome, arrived: arrived))
        })
        tap.arrived = { [weak self] service, call in
            self?.place.withLock {
                $0.arrivals["\(service)#\(call)"] = ServiceDelivery(after: $0.actions, t: $0.now(), order: $0.arrived)
                $0.arrived += 1
            }
        }
        return tap
    }

    static func serviceLine(_ service: String, call: Int, _ outcome: ServiceOutcome, arrived: ServiceDelivery? = nil) -> String {
        func q(_ s: String) -> String { (try? LuaValue.string(LuaString(s)).json()) ?? "\"\"" }
        let values = (try? LuaValue.table(LuaTable(array: outcome.values, isJSONArray: true)).json(sortedKeys: true, root: "values")) ?? "[]"
        let error = outcome.error.map { ",\"error\":\(q($0))" } ?? ""
        let point = arrived.map { ",\"after\":\($0.after),\"t\":\($0.t)" + ($0.order.map { ",\"n\":\($0)" } ?? "") } ?? ""
        return "{\"service\":\(q(service)),\"call\":\(call),\"values\":\(values)\(error)\(point)}"
    }

    private func write(_ line: String) {
        lock.withLock { handle.write(Data((line + "\n").utf8)) }
    }
}
