import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
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
/// replay answers each call at that point; `read` lines the time and seed the plugins read
/// (`FeatureInputs`: on the real clock), which replay hands back; the other lines are the run's jsonl events
/// with whole states. `RecordingLine` and `EventLine` (MoonflowEvents) write them.
package final class SessionRecorder: RunObserver, @unchecked Sendable {
    /// The header's `record` value: what `replay` looks for on the first line.
    package static let kind = RecordingLine.kind
    /// The header's `format`: bumped when the layout of a recording changes.
    package static let format = RecordingLine.format

    /// Where the lines go: the file, or nowhere (`answersOnly`).
    private let handle: FileHandle?
    private let printer = EventPrinter(format: .jsonl)
    /// Gets every `service` line too: the inspector's re-run answers calls as they were answered.
    package var alsoAnswer: (@Sendable (String) -> Void)?
    private let lock = NSLock()
    /// Action events seen so far, the run's clock, and where each service call's answer
    /// first arrived (by `service#call`), all on the state executor.
    private let place = Locked(Place())

    /// What `place` guards. A struct, not a tuple: a closure inside a tuple that a generic
    /// `Locked` hands out `inout` is wrapped in a reabstraction thunk on the way in and
    /// another on the way out, so every action's `actions += 1` kept two more objects alive
    /// for the rest of the run (and made each `now()` call deeper).
    private struct Place {
        var actions = 0
        var now: @Sendable () -> Int = { 0 }
        var arrivals: [String: ServiceDelivery] = [:]
        var arrived = 0
    }

    /// The plugin path the header names instead of the run's (`replay --update` keeps the
    /// recorded one, however `--plugins` was given).
    private let pluginPath: String?

    /// Whether the recorded run reports `call` and `invariant` events (the header says so, and
    /// a replay compares them and `internal` ones only then).
    private let effectEvents: Bool

    /// Creates (or truncates) `path`.
    /// - Parameter effectEvents: false for a run that reports no `call` and `invariant`
    ///   events (`serve`'s apps).
    /// - Throws: `HostError` naming the file when it cannot be written.
    package init(path: String, pluginPath: String? = nil, effectEvents: Bool = true) throws {
        self.pluginPath = pluginPath
        self.effectEvents = effectEvents
        guard FileManager.default.createFile(atPath: path, contents: nil),
            let handle = FileHandle(forWritingAtPath: path)
        else {
            throw HostError("cannot write the recording \(path): check that its folder exists and is writable")
        }
        self.handle = handle
    }

    /// A recorder that writes nothing and hands only the `service` lines to `answered`
    /// (`run --inspect` without `--record`).
    package init(answersOnly answered: @escaping @Sendable (String) -> Void) {
        pluginPath = nil
        handle = nil
        effectEvents = true
        alsoAnswer = answered
    }

    deinit { try? handle?.close() }

    /// The header line for a run of `run`.
    package static func header(_ run: RunDescription, effects: Bool = true) -> String {
        RecordingLine.header(run, effects: effects)
    }

    /// An `input` line.
    package static func inputLine(_ action: LuaValue, t: Int) -> String { RecordingLine.input(action, t: t) }

    /// `read` lines that came before the header (the plugin read the time as it loaded).
    private var readsBeforeHeader: [String]? = []

    /// The seed of the run's random numbers, for the header (`FeatureInputs`); set before the run starts.
    package var seed: Int64? {
        get { lock.withLock { _seed } }
        set { lock.withLock { _seed = newValue } }
    }
    private var _seed: Int64?

    /// A value of time the plugins read (`FeatureInputs`), as a `read` line.
    package func read(_ kind: String, _ value: LuaValue) {
        guard handle != nil else { return }
        let line = RecordingLine.read(kind, value: value)
        lock.withLock {
            if readsBeforeHeader != nil {
                readsBeforeHeader?.append(line)
            } else {
                handle?.write(Data((line + "\n").utf8))
            }
        }
    }

    package func started(_ run: RunDescription, dispatch: any RunDispatcher) {
        place.withLock { $0.now = run.now }
        guard handle != nil else { return }
        var described = run
        if let pluginPath {
            described = RunDescription(
                name: run.name, version: run.version, path: pluginPath, actions: run.actions, clock: run.clock,
                now: run.now)
        }
        let header = RecordingLine.header(described, effects: effectEvents, seed: seed)
        lock.withLock {
            for line in [header] + (readsBeforeHeader ?? []) { handle?.write(Data((line + "\n").utf8)) }
            readsBeforeHeader = nil
        }
    }

    package func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?) {
        observe(event, t: t, cause: cause, causeID: nil, from: nil)
    }

    /// The line the run printed for `event`, with the child it came from under an
    /// `mf.compose` (`"from"`), which replay compares like the rest.
    package func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?, causeID: String?, from child: String?) {
        if case .action = event { place.withLock { $0.actions += 1 } }
        guard handle != nil else { return }
        write(lock.withLock { printer.render(event, t: t, from: child) })
    }

    package func input(_ action: LuaValue, t: Int) {
        guard handle != nil else { return }
        write(SessionRecorder.inputLine(action, t: t))
    }

    /// The tap that writes a `service` line for every Swift service or repository call once it ends:
    /// `{"service":"users:getAll","call":1,"values":[...],"error":"..."}`.
    package var serviceTap: ServiceTap {
        let tap = ServiceTap(recording: { [weak self] service, call, outcome in
            guard let self else { return }
            let arrived = place.withLock { $0.arrivals.removeValue(forKey: "\(service)#\(call)") }
            let line = SessionRecorder.serviceLine(service, call: call, outcome, arrived: arrived)
            if handle != nil { write(line) }
            alsoAnswer?(line)
        })
        tap.arrived = { [weak self] service, call in
            self?.place.withLock {
                $0.arrivals["\(service)#\(call)"] = ServiceDelivery(after: $0.actions, t: $0.now(), order: $0.arrived)
                $0.arrived += 1
            }
        }
        return tap
    }

    static func serviceLine(
        _ service: String, call: Int, _ outcome: ServiceOutcome, arrived: ServiceDelivery? = nil
    ) -> String {
        RecordingLine.service(service, call: call, values: outcome.values, error: outcome.error, arrived: arrived)
    }

    /// A `service` line read back: the call's outcome, and where its answer arrived when
    /// the line says. Nil when it is not a whole service line.
    package static func serviceAnswer(
        _ value: LuaValue
    ) -> (service: String, call: Int, outcome: ServiceOutcome, delivery: ServiceDelivery?)? {
        guard let service = value["service"]?.stringValue, case .integer(let call)? = value["call"],
            case .table(let values)? = value["values"]
        else { return nil }
        var delivery: ServiceDelivery?
        if case .integer(let after)? = value["after"], case .integer(let t)? = value["t"], after >= 0, t >= 0 {
            var order: Int?
            if case .integer(let n)? = value["n"], n >= 0 { order = Int(clamping: n) }
            delivery = ServiceDelivery(after: Int(clamping: after), t: Int(clamping: t), order: order)
        }
        return (
            service, Int(clamping: call), ServiceOutcome(values: values.array, error: value["error"]?.stringValue),
            delivery
        )
    }

    private func write(_ line: String) {
        lock.withLock { handle?.write(Data((line + "\n").utf8)) }
    }
}

extension FeatureRun.Options {
    /// Hands every service and repository answer to `observer` as a recording's `service`
    /// line (what `run --inspect` does for the inspector's `rerun`): through the `--record`
    /// recorder when there is one, else through a recorder that writes nothing.
    package mutating func handAnswers(to observer: any RunObserver) {
        if let recorder = observers.lazy.compactMap({ $0 as? SessionRecorder }).first {
            recorder.alsoAnswer = { [weak observer] in observer?.answered($0) }
            return
        }
        let answers = SessionRecorder(answersOnly: { [weak observer] in observer?.answered($0) })
        observers.append(answers)
        serviceTap = answers.serviceTap
    }
}
