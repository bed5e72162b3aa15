import Foundation
import LuaKit
import MoonflowDebug
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import MoonflowRun
import MoonflowTesting
import Streams

/// `moonflow replay FILE [--update]`: re-runs a `--record`ed session on the
/// virtual clock and compares every event with the recording.
///
///     var replay = SessionReplay(file: "session.jsonl")
///     let status = replay.run()   // 0 identical, 1 an event differs, 2 a bad recording
///
/// Each `input` line is sent at its recorded time; the events the feature gives
/// now (states, actions, mutations, effects, errors, logs) are compared, in
/// order, with the recorded ones, numbers by value and type (`9` is not `9.0`),
/// leaving out only what varies between runs (`t`, `where`, `traceback`). The
/// first that differs is printed as a diff (`- recorded`, `+ now`) and the exit
/// status is 1. Recorded actions and mutations that the current schemas refuse
/// are named first, with their line in the recording.
///
/// The recording's plugin path is resolved inside `pluginsFolder` (by default
/// the recording's own folder) and may not leave it; the plugin runs sandboxed
/// unless `profile` says otherwise.
package struct SessionReplay {
    package var file: String
    /// Write the new run over the recording instead of comparing.
    package var update = false
    package var timeLimitMs: Int64? = 1000
    package var memoryLimitMB: Int? = 512
    /// Sandboxed unless the replay is told the plugin is trusted (`--trusted`).
    package var profile: LuaState.Profile = .sandboxed
    /// The folder the recording's plugin path is resolved in; nil: the recording's own folder.
    package var pluginsFolder: String?
    /// Where the report goes (standard output by default).
    package var write: @Sendable (String) -> Void = FeatureRun.stdout
    /// The debugger that serves the replay (`--debug`): breakpoints, steps, and going back
    /// (a replay can be repeated exactly); `debugWait` holds the load until the editor has
    /// sent its breakpoints.
    package var debugger: DebugServer?
    package var debugWait = false

    package init(file: String) { self.file = file }

    /// A recording read back: what the run needs before it starts (the header, the recorded
    /// answers, each input's time) and what each line is. Inputs and events stay in the file:
    /// the run reads inputs from it as it goes and compares each event it gives with the next
    /// recorded one, so a long recording costs a byte per line, not its events in memory.
    struct Recording {
        var path = ""
        var feature = ""
        var version: Int64 = 1
        /// Recorded on the virtual clock: every event's `t` is part of what the code did, so a
        /// replay compares it (on the real clock it is wall-clock jitter, left out).
        var virtualClock = false
        /// Its events include `internal`, `call` and `invariant` ones (the header's `effects`);
        /// the replay of an older recording (or `serve`'s) leaves those out of what it compares.
        var effectEvents = false
        var inputs = 0
        /// What each service call answered when recorded, by service and call number.
        var services: [String: [Int: ServiceOutcome]] = [:]
        /// Where each answer arrived in the recorded run (recordings made since this was kept).
        var deliveries: [String: [Int: ServiceDelivery]] = [:]
        /// Each input's time, in order.
        var inputTimes: [Int] = []
        /// What each line is, by line number - 1.
        var lines: [Line] = []
        /// How many recorded events (states too) there are.
        var events = 0
        /// The run's seed and the values of time its plugins read (`read` lines), by kind in order.
        var seed: Int64?
        var reads: [String: [LuaValue]] = [:]

        enum Line: UInt8 { case other, input, event, mutation }
    }

    /// A problem with the file itself (exit 2).
    struct BadRecording: Error, CustomStringConvertible { let description: String }

    /// - Returns: 0 when every state matches (or after `--update`), 1 when one differs or
    ///   a recorded action or mutation no longer validates, 2 when the recording cannot be read.
    package func run() -> Int32 {
        let recording: Recording
        do { recording = try read() } catch {
            FileHandle.standardError.write(Data("moonflow replay: \(error)\n".utf8))
            return 2
        }
        let plugin: PluginPlace
        do { plugin = try place(recording) } catch {
            FileHandle.standardError.write(Data("moonflow replay: \(error)\n".utf8))
            return 2
        }
        var status: Int32 = 0
        if !update {
            let refused = validate(recording, path: plugin.path)
            for line in refused { write(line) }
            if !refused.isEmpty { status = 1 }
        }

        // The run, on the virtual clock, fed the recorded inputs at their times.
        var options = FeatureRun.Options(path: plugin.path)
        options.clock = .virtual
        options.format = .jsonl
        options.timeLimitMs = timeLimitMs
        options.memoryLimitMB = memoryLimitMB
        options.profile = profile
        // Swift services and repositories answer as they did when recorded, each at the point in
        // the run where its answer arrived (after the same action, at its time, before the next
        // input), so answers that came late on the real clock come as late now; --update calls
        // them again.
        // The plugins draw from the recorded seed and read the recorded times, in order, then the
        // virtual clock's; --update records them again.
        options.seed = recording.seed
        options.readsFeed = RecordedReads(recording.reads).next
        options.recordsReads = !recording.reads.isEmpty
        let gate = ReplayGate(deliveries: recording.deliveries.values.flatMap(\.values))
        // The gate the input's end lets go of: under the debugger, the current host's.
        let current = Locked<ReplayGate>(gate)
        if let debugger, !update {
            // Each host the run loads (a way back loads it again) answers as from the start.
            options.readsFeed = nil
            options.replayAnswers = {
                let fresh = ReplayGate(deliveries: recording.deliveries.values.flatMap(\.values))
                current.withLock { $0 = fresh }
                return ReplayAnswers(
                    tap: ServiceTap(answering: recording.services, deliveries: recording.deliveries, gate: fresh),
                    gate: fresh, reads: RecordedReads(recording.reads).next)
            }
            options.repeatable = true
            // The recording holds every input already: what the run keeps is of its size, and
            // going back stays possible to its end.
            options.travelHistory = .max
            options.prepareHost = { [debugWait] host, _ in
                debugger.controller.serve(host.lua)
                if debugWait { debugger.controller.waitForConfiguration() }
            }
        } else if !update {
            options.serviceTap = ServiceTap(answering: recording.services, deliveries: recording.deliveries, gate: gate)
            options.observers.append(ActionsHandled(gate: gate))
        }
        let updated = update ? file + ".new" : nil
        if let updated {
            do {
                let recorder = try SessionRecorder(path: updated, pluginPath: recording.path)
                options.observers = [recorder]
                options.serviceTap = recorder.serviceTap
            } catch {
                FileHandle.standardError.write(Data("moonflow replay: \(error)\n".utf8))
                return 2
            }
        }
        let output = PrintedEvents(
            comparing: update ? nil : RecordedEvents(file: file, recording: recording), plugin: plugin,
            timed: recording.virtualClock, effectEvents: recording.effectEvents)
        // Input lines as timed run input, read from the file as the run asks for them ("" for
        // every other line, so an input's line number is its line in the recording).
        let reader = RecordingLines(path: file)
        var number = 0
        let input = InputSource(interactive: false, name: file) {
            guard let line = reader?.next() else {
                current.withLock { $0 }.releaseAll()  // no action comes any more: what still waits for one answers now
                return nil
            }
            defer { number += 1 }
            guard number < recording.lines.count, recording.lines[number] == .input,
                let value = try? LuaValue(jsonBytes: line), case .integer(let t)? = value["t"],
                let action = value["input"]
            else { return "" }
            return TimedInput.line(at: Int(clamping: t), send: action, root: "input")
        }
        let run = FeatureRun(options: options, input: input, write: output.add)
        if let debugger, options.repeatable {
            debugger.controller.repeats(
                by: { [weak run] in run?.travel() }, loading: LoadedSources(for: [options.path]))
        }
        _ = run.run()

        if let updated {
            if rename(updated, file) != 0 {
                FileHandle.standardError.write(
                    Data(
                        "moonflow replay: cannot write \(file) (\(String(cString: strerror(errno)))); the new recording is in \(updated)\n"
                            .utf8))
                return 2
            }
            write("replay \(file): rewritten (\(recording.inputs) inputs, \(output.states) states)")
            return 0
        }
        if let difference = output.difference(file: file) {
            for line in difference { write(line) }
            if difference.count > 1 { write("run `moonflow replay \(file) --update` to accept the new behaviour") }
            return 1
        }
        if status == 0 { write("replay \(file): identical (\(recording.inputs) inputs, \(output.states) states)") }
        return status
    }

    /// The fields of an event a replay compares: all but those that vary between runs.
    static func compared(_ event: LuaValue) -> LuaValue {
        guard case .table(var t) = event else { return event }
        for varying in ["t", "where", "traceback"] { t[.string(LuaString(varying))] = nil }
        return .table(t)
    }

    /// The report on a recorded event (at `line`, the `index`th, the `statesSeen`th state when
    /// one) that differs from the event the run gives in its place, or nil when they are the same.
    /// `timed` (a virtual-clock recording): an event that came at another `t` differs too.
    static func difference(
        file: String, recorded event: LuaValue, line: Int, statesSeen: Int, now current: LuaValue, timed: Bool = false
    ) -> [String]? {
        let content = contentDifference(file: file, recorded: event, line: line, statesSeen: statesSeen, now: current)
        guard content == nil, timed, let was = event["t"], let now = current["t"], was != now else { return content }
        let kind = event["event"]?.stringValue ?? "?"
        let which = kind == "state" ? "state \(statesSeen)" : "the \(kind) event"
        return [
            "replay \(file): \(which) at line \(line) came at \(now) ms on the virtual clock, recorded at \(was) ms (- recorded, + now):",
            "- t = \(was)",
            "+ t = \(now)",
        ]
    }

    /// `difference` leaving out when the event came.
    private static func contentDifference(
        file: String, recorded event: LuaValue, line: Int, statesSeen: Int, now current: LuaValue
    ) -> [String]? {
        let kind = event["event"]?.stringValue ?? "?"
        let currentKind = current["event"]?.stringValue ?? "?"
        if kind != currentKind {
            return [
                "replay \(file): line \(line) recorded \(Schema.withArticle(kind)) event where the run now gives \(Schema.withArticle(currentKind)) event (- recorded, + now):",
                "- \(kind) = \(StateDiff.render(Self.compared(event)))",
                "+ \(currentKind) = \(StateDiff.render(Self.compared(current)))",
            ]
        }
        if kind == "state" {
            let (a, b) = (event["state"] ?? .nil, current["state"] ?? .nil)
            if !StateDiff.same(a, b, numbersByType: true) {
                return ["replay \(file): state \(statesSeen) differs from line \(line) (- recorded, + now):"]
                    + StateDiff.lines(expected: a, actual: b, numbersByType: true)
            }
            return nil
        }
        let (a, b) = (Self.compared(event), Self.compared(current))
        if !StateDiff.same(a, b, numbersByType: true) {
            return ["replay \(file): the \(kind) event at line \(line) differs (- recorded, + now):"]
                + StateDiff.lines(expected: a, actual: b, numbersByType: true).map {
                    $0.replacingOccurrences(of: " state = ", with: " \(kind) = ")
                }
        }
        return nil
    }

    /// Where the recorded plugin is, inside the plugins folder.
    struct PluginPlace {
        /// The path to run (as recorded when the folder is the current one).
        var path: String
        /// What was put before the recorded path ("" or "FOLDER/").
        var prefix: String

        /// `value` with `prefix` taken out of its strings: file names in messages
        /// read as they did when recorded.
        func relative(_ value: LuaValue) -> LuaValue {
            guard !prefix.isEmpty else { return value }
            switch value {
            case .string(let s):
                let text = s.description
                return text.contains(prefix)
                    ? .string(LuaString(text.replacingOccurrences(of: prefix, with: ""))) : value
            case .table(var t):
                t.array = t.array.map(relative)
                for (k, v) in t.hash { t.hash[k] = relative(v) }
                return .table(t)
            default: return value
            }
        }
    }

    /// Resolves the recorded path in the plugins folder.
    /// - Throws: `BadRecording` for a path that leaves the folder or a plugin that is not there.
    func place(_ recording: Recording) throws -> PluginPlace {
        let fm = FileManager.default
        let folder = pluginsFolder ?? PathText.parent(of: file)
        let given = pluginsFolder == nil ? "the recording's own folder, \(folder)" : "--plugins \(folder)"
        let path = recording.path
        let cwd = fm.currentDirectoryPath
        func absolute(_ p: String) -> String {
            ((p.hasPrefix("/") ? p : cwd + "/" + p) as NSString).standardizingPath
        }
        let root = absolute(folder)
        let inFolder = path.hasPrefix("/") ? path : root + "/" + path
        let resolved = (inFolder as NSString).standardizingPath
        let components = path.split(separator: "/")
        let leaves = BadRecording(
            description:
                "\(file):1: the recording's plugin path \(StateDiff.render(.string(LuaString(path)))) leaves the plugins folder (\(given)); a replay runs only plugins inside it: give the folder that holds the plugin with --plugins DIR"
        )
        guard !path.contains("\0"), !path.hasPrefix("~"), !components.contains(".."),
            resolved == root || resolved.hasPrefix(root == "/" ? "/" : root + "/")
        else { throw leaves }
        // And where it really is: a symbolic link inside the folder may point out of it (the
        // plugin's folder, one on the way to it, or its init.lua).
        func staysInside(_ place: String) -> Bool {
            guard let realRoot = FolderWalk.realPath(root) else { return false }
            var files = [place]
            var isFolder: ObjCBool = false
            if fm.fileExists(atPath: place, isDirectory: &isFolder), isFolder.boolValue {
                files.append(place + "/init.lua")
            }
            return files.allSatisfy { file in
                guard let real = FolderWalk.realPath(file) else { return !fm.fileExists(atPath: file) }
                return real == realRoot || real.hasPrefix(realRoot == "/" ? "/" : realRoot + "/")
            }
        }
        // The plugin is found as `moonflow run` finds it: a path, or a name in FOLDER/plugins.
        let prefix = root == absolute(".") || path.hasPrefix("/") ? "" : folder + "/"
        if fm.fileExists(atPath: prefix + path) {
            guard staysInside(prefix + path) else { throw leaves }
            return PluginPlace(path: prefix + path, prefix: prefix)
        }
        if fm.fileExists(atPath: prefix + "plugins/" + path + "/init.lua") {
            guard staysInside(prefix + "plugins/" + path) else { throw leaves }
            return PluginPlace(path: prefix.isEmpty ? path : prefix + "plugins/" + path, prefix: prefix)
        }
        throw BadRecording(
            description:
                "\(file) was recorded with the plugin \(path), which is not in \(given); give the folder `moonflow run` ran in with --plugins DIR"
        )
    }

    /// Reads the recording.
    /// - Throws: `BadRecording` naming the file, the line and what a recording looks like.
    func read() throws -> Recording {
        guard let reader = RecordingLines(path: file) else {
            throw BadRecording(
                description:
                    "cannot read \(file): it does not exist or is not readable; make one with moonflow run PATH --record \(file)"
            )
        }
        var recording = Recording()
        var n = 0
        while let line = reader.next() {
            n += 1
            if line.allSatisfy({ $0 == 0x20 || (0x09...0x0D).contains($0) }) {
                recording.lines.append(.other); continue
            }
            let value: LuaValue
            do { value = try LuaValue(jsonBytes: line) } catch {
                throw BadRecording(
                    description:
                        "\(file):\(n): not JSON (\(error)); a recording is JSON Lines written by moonflow run --record")
            }
            if n == 1 {
                guard value["record"]?.stringValue == SessionRecorder.kind, let path = value["path"]?.stringValue else {
                    throw BadRecording(
                        description:
                            "\(file):1: not a moonflow recording (the first line must be the {\"record\":\"\(SessionRecorder.kind)\",...} header); make one with moonflow run PATH --record \(file)"
                    )
                }
                if let format = value["format"], format != .integer(Int64(SessionRecorder.format)) {
                    throw BadRecording(
                        description:
                            "\(file):1: recording format \(format) is not \(SessionRecorder.format), the one this moonflow reads; record the session again"
                    )
                }
                guard !path.isEmpty else {
                    throw BadRecording(
                        description:
                            "\(file):1: the header's \"path\" is empty; it names the plugin the session ran (\"plugins/counter\"): record the session again, or write the plugin's path there"
                    )
                }
                recording.path = path
                recording.feature = value["feature"]?.stringValue ?? "?"
                recording.virtualClock = value["clock"]?.stringValue == FeatureHost.Clock.virtual.rawValue
                recording.effectEvents = value["effects"] == .boolean(true)
                if let seed = value["seed"] {
                    guard case .integer(let seed) = seed else {
                        throw BadRecording(
                            description:
                                "\(file):1: the header's \"seed\" is \(seed), not an integer; it is the seed the run's random numbers came from: record the session again"
                        )
                    }
                    recording.seed = seed
                }
                if case .integer(let v)? = value["version"] { recording.version = v }
                recording.lines.append(.other)
                continue
            }
            if value["input"] != nil {
                guard case .integer(let t)? = value["t"], t >= 0 else {
                    throw BadRecording(
                        description: "\(file):\(n): an input line needs its time \"t\" in ms (an integer, 0 or more)")
                }
                recording.inputTimes.append(Int(clamping: t))
                recording.inputs += 1
                recording.lines.append(.input)
                continue
            }
            if let kind = value["read"]?.stringValue {
                recording.reads[kind, default: []].append(value["value"] ?? .nil)
                recording.lines.append(.other)
                continue
            }
            // (A `call` event names its service too: it is an event.)
            if value["event"] == nil, value["service"]?.stringValue != nil {
                guard let answer = SessionRecorder.serviceAnswer(value) else {
                    throw BadRecording(
                        description: "\(file):\(n): a service line needs \"call\" (an integer) and \"values\" (a list)")
                }
                recording.services[answer.service, default: [:]][answer.call] = answer.outcome
                if let delivery = answer.delivery {
                    recording.deliveries[answer.service, default: [:]][answer.call] = delivery
                }
                recording.lines.append(.other)
                continue
            }
            var kind = Recording.Line.event
            if let event = value["event"]?.stringValue,
                PrintedEvents.compares(event, effectEvents: recording.effectEvents, timed: recording.virtualClock)
                    == false
            {
                recording.lines.append(.other)  // a kind this recording's replay does not compare
                continue
            }
            switch value["event"]?.stringValue {
            case "state":
                guard value["state"] != nil else {
                    throw BadRecording(
                        description:
                            "\(file):\(n): a state event without a whole \"state\"; recordings keep whole states (record without --state patch)"
                    )
                }
            case "mutation":
                if value["mutation"] != nil { kind = .mutation }
            case nil, "reload":  // a reload is not part of what a replay does
                recording.lines.append(.other)
                continue
            default: break
            }
            recording.lines.append(kind)
            recording.events += 1
        }
        if let error = reader.error {
            throw BadRecording(
                description:
                    "cannot read \(file) to its end (\(error)); make one with moonflow run PATH --record \(file)")
        }
        // No later than the input after the action each answer followed: it came before that one.
        for (service, calls) in recording.deliveries {
            for (call, delivery) in calls where delivery.after < recording.inputTimes.count {
                recording.deliveries[service]?[call]?.before = recording.inputTimes[delivery.after]
            }
        }
        guard !recording.path.isEmpty else {
            throw BadRecording(
                description: "\(file) is empty; make a recording with moonflow run PATH --record \(file)")
        }
        return recording
    }

    /// Recorded actions and mutations the feature's current schemas refuse, one line each.
    func validate(_ recording: Recording, path: String) -> [String] {
        guard
            let host = try? FeatureHost(
                configuration: .init(
                    searchPaths: FeatureRun.searchPaths(for: path),
                    profile: profile, timeLimitMs: timeLimitMs,
                    memoryLimitMB: memoryLimitMB, clock: .virtual)),
            (try? HostOwnedProcess.install(in: host.lua, command: "replay") { _, _ in }) != nil,
            let (definition, _) = try? host.loadDefinition(path), definition.kind == .feature
        else { return [] }  // the run itself reports a plugin that does not load
        var out: [String] = []
        if definition.version != recording.version {
            out.append(
                "\(file):1: recorded with \(recording.feature) version \(recording.version), the code is now version \(definition.version)"
            )
        }
        // Actions first, then mutations, each in file order (as the report always named them).
        for kind in [Recording.Line.input, .mutation] {
            guard recording.lines.contains(kind), let reader = RecordingLines(path: file) else { continue }
            var n = 0
            while let line = reader.next() {
                n += 1
                guard n <= recording.lines.count, recording.lines[n - 1] == kind,
                    let value = try? LuaValue(jsonBytes: line)
                else { continue }
                do {
                    if kind == .input {
                        _ = try definition.actions.validate(value["input"] ?? .nil)
                    } else {
                        _ = try definition.mutations.validate(value["mutation"] ?? .nil)
                    }
                } catch {
                    out.append(
                        "\(file):\(n): the recorded \(kind == .input ? "action" : "mutation") no longer validates: \(error)"
                    )
                }
            }
        }
        return out
    }
}

/// The events a `FeatureRun` prints in jsonl (reloads left out), each compared as it comes
/// with the next recorded one: what is kept is the first difference, not the events.
private final class PrintedEvents: @unchecked Sendable {
    private let lock = NSLock()
    private let recorded: RecordedEvents?
    private let plugin: SessionReplay.PluginPlace
    private var count = 0
    private var statesSeen = 0
    private var found: [String]?
    /// The first event past the recorded ones.
    private var extra: LuaValue?
    private var stateCount = 0
    /// Compare each event's `t` too (a virtual-clock recording).
    private let timed: Bool
    /// Compare `internal`, `call` and `invariant` events (a recording made since they were events).
    private let effectEvents: Bool

    init(comparing recorded: RecordedEvents?, plugin: SessionReplay.PluginPlace, timed: Bool, effectEvents: Bool) {
        self.recorded = recorded
        self.plugin = plugin
        self.timed = timed
        self.effectEvents = effectEvents
    }

    /// The kinds an older recording has none of.
    static let effectKinds: Set<String> = ["internal", "call", "invariant"]

    /// Whether a replay compares events of `kind`: not the kinds an older recording has none
    /// of, and on the real clock not `call`s, whose place among the events is where a call
    /// made after an answer (a `concat`'s next call) fell against other answers arriving: the
    /// answers themselves are placed and compared, the calls' order is the clock's jitter.
    static func compares(_ kind: String, effectEvents: Bool, timed: Bool) -> Bool {
        if !effectEvents && effectKinds.contains(kind) { return false }
        return timed || kind != "call"
    }

    var states: Int { lock.withLock { stateCount } }

    func add(_ line: String) {
        // An event line (`EventLine`) is an object with a string `event`; a reload's is not compared.
        guard let event = try? LuaValue(json: line), let kind = EventLine.kind(of: event), kind != "reload" else {
            return
        }
        if recorded != nil && !Self.compares(kind, effectEvents: effectEvents, timed: timed) { return }
        lock.withLock {
            count += 1
            if kind == "state" { stateCount += 1 }
            guard let recorded, found == nil, extra == nil else { return }
            guard let (line, expected) = recorded.next() else { extra = plugin.relative(event); return }
            found = SessionReplay.difference(
                file: recorded.file, recorded: expected, line: line, statesSeen: statesSeen,
                now: plugin.relative(event),
                timed: timed)
            if expected["event"]?.stringValue == "state" { statesSeen += 1 }
        }
    }

    /// The report on the first event that differs, or nil when all are the same.
    func difference(file: String) -> [String]? {
        lock.withLock {
            guard let recorded else { return nil }
            if let found { return found }
            if count < recorded.total, let (line, event) = recorded.next() {
                let kind = event["event"]?.stringValue ?? "?"
                return [
                    "replay \(file): the recording has \(recorded.total) events, the run now \(count): the \(kind) event at line \(line) never came",
                    "- \(kind) = \(StateDiff.render(SessionReplay.compared(event)))",
                ]
            }
            guard let extra else { return nil }
            let kind = extra["event"]?.stringValue ?? "?"
            return [
                "replay \(file): the run now gives \(count) events, the recording \(recorded.total); the first new one:",
                "+ \(kind) = \(StateDiff.render(SessionReplay.compared(extra)))",
            ]
        }
    }
}

/// The values of time a recording holds (`read` lines), handed back in order by kind; nil
/// once a kind's run out (the plugin reads more now: the virtual clock answers).
private final class RecordedReads: @unchecked Sendable {
    private let lock = NSLock()
    private var reads: [String: ArraySlice<LuaValue>]

    init(_ reads: [String: [LuaValue]]) { self.reads = reads.mapValues { $0[...] } }

    func next(_ kind: String) -> LuaValue? {
        lock.withLock { reads[kind]?.popFirst() }
    }
}

/// The recorded events, read from the file one at a time, with their line numbers.
private final class RecordedEvents: @unchecked Sendable {
    let file: String
    let total: Int
    private let lines: [SessionReplay.Recording.Line]
    private let reader: RecordingLines?
    private var n = 0

    init(file: String, recording: SessionReplay.Recording) {
        self.file = file
        total = recording.events
        lines = recording.lines
        reader = RecordingLines(path: file)
    }

    func next() -> (line: Int, event: LuaValue)? {
        while let line = reader?.next() {
            n += 1
            guard n <= lines.count, lines[n - 1] == .event || lines[n - 1] == .mutation else { continue }
            if let value = try? LuaValue(jsonBytes: line) { return (n, value) }
        }
        return nil
    }
}

/// A file's lines, read a block at a time: each line's bytes without its `\n`, and after a
/// last `\n` one empty line more (as splitting the text at every `\n` gives).
final class RecordingLines: @unchecked Sendable {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    private var ended = false
    private var finished = false
    /// Why reading stopped early, if it did.
    private(set) var error: String?

    init?(path: String) {
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { close(fd); return nil }
    }

    deinit { close(fd) }

    func next() -> ArraySlice<UInt8>? {
        guard !finished else { return nil }
        var searched = start
        while true {
            let newline: Int? = buffer.withUnsafeBufferPointer { b in
                guard searched < b.count, let base = b.baseAddress,
                    let found = memchr(base + searched, 0x0A, b.count - searched)
                else { return nil }
                return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            }
            if let newline {
                defer { start = newline + 1 }
                return buffer[start..<newline]
            }
            searched = buffer.count
            if ended {
                finished = true
                return buffer[start...]
            }
            // Move what is left of the buffer to its front, then read more after it.
            if start > 0 {
                buffer.removeSubrange(0..<start)
                searched -= start
                start = 0
            }
            let old = buffer.count, block = 1 << 16
            buffer.reserveCapacity(old + block)
            var got = 0
            let space = [UInt8](unsafeUninitializedCapacity: block) { chunk, count in
                repeat { got = read(fd, chunk.baseAddress!, block) } while got < 0 && errno == EINTR
                count = max(got, 0)
            }
            buffer.append(contentsOf: space)
            if got < 0 { error = String(cString: strerror(errno)) }
            if got <= 0 { ended = true }
        }
    }
}
