import Foundation
import LuaKit
import MoonflowHost
import MoonflowLua

/// `moonflow replay FILE [--update]`: re-runs a `--record`ed session on the
/// virtual clock and compares every state with the recording.
///
///     var replay = SessionReplay(file: "session.jsonl")
///     let status = replay.run()   // 0 identical, 1 a state differs, 2 a bad recording
///
/// Each `input` line is sent at its recorded time; the states the feature goes
/// through now are compared, in order, with the recorded `state` events. The
/// first that differs is printed as a diff (`- recorded`, `+ now`) and the exit
/// status is 1. Recorded actions and mutations that the current schemas refuse
/// are named first, with their line in the recording.
public struct SessionReplay {
    public var file: String
    /// Write the new run over the recording instead of comparing.
    public var update = false
    public var timeLimitMs: Int64? = 1000
    public var memoryLimitMB: Int? = 512
    public var profile: LuaState.Profile = .trusted
    /// Where the report goes (standard output by default).
    public var write: @Sendable (String) -> Void = FeatureRun.stdout

    public init(file: String) { self.file = file }

    /// A recording read back.
    struct Recording {
        var path = ""
        var feature = ""
        var version: Int64 = 1
        /// Input lines (as timed run input, or "" to keep line numbers) in file order.
        var inputLines: [String] = []
        var inputs = 0
        /// What each service call answered when recorded, by service and call number.
        var services: [String: [Int: ServiceOutcome]] = [:]
        /// Recorded states with their line numbers.
        var states: [(line: Int, state: LuaValue)] = []
        var actions: [(line: Int, action: LuaValue)] = []
        var mutations: [(line: Int, mutation: LuaValue)] = []
    }

    /// A problem with the file itself (exit 2).
    struct BadRecording: Error, CustomStringConvertible { let description: String }

    /// - Returns: 0 when every state matches (or after `--update`), 1 when one differs or
    ///   a recorded action or mutation no longer validates, 2 when the recording cannot be read.
    public func run() -> Int32 {
        let recording: Recording
        do { recording = try read() } catch {
            FileHandle.standardError.write(Data("moonflow replay: \(error)\n".utf8))
            return 2
        }
        var status: Int32 = 0
        if !update {
            let refused = validate(recording)
            for line in refused { write(line) }
            if !refused.isEmpty { status = 1 }
        }

        // The plugin is found as `moonflow run` finds it: a path, or a name in ./plugins.
        let fm = FileManager.default
        guard fm.fileExists(atPath: recording.path) || fm.fileExists(atPath: "plugins/\(recording.path)/init.lua") else {
            FileHandle.standardError.write(Data("moonflow replay: \(file) was recorded with the plugin \(recording.path), which is not found from here (\(fm.currentDirectoryPath)); run moonflow replay in the folder the recording was made in\n".utf8))
            return 2
        }

        // The run, on the virtual clock, fed the recorded inputs at their times.
        var options = FeatureRun.Options(path: recording.path)
        options.clock = .virtual
        options.format = .jsonl
        options.timeLimitMs = timeLimitMs
        options.memoryLimitMB = memoryLimitMB
        options.profile = profile
        // Swift services and repositories answer as they did when recorded; --update calls them again.
        if !update { options.serviceTap = ServiceTap(answering: recording.services) }
        let updated = update ? file + ".new" : nil
        if let updated {
            do {
                let recorder = try SessionRecorder(path: updated)
                options.observers = [recorder]
                options.serviceTap = recorder.serviceTap
            } catch {
                FileHandle.standardError.write(Data("moonflow replay: \(error)\n".utf8))
                return 2
            }
        }
        let output = PrintedStates()
        var lines = recording.inputLines.makeIterator()
        let input = InputLines(interactive: false, name: file) { lines.next() }
        _ = FeatureRun(options: options, input: input, write: output.add).run()

        if let updated {
            if rename(updated, file) != 0 {
                FileHandle.standardError.write(Data("moonflow replay: cannot write \(file) (\(String(cString: strerror(errno)))); the new recording is in \(updated)\n".utf8))
                return 2
            }
            write("replay \(file): rewritten (\(recording.inputs) inputs, \(output.all.count) states)")
            return 0
        }
        let now = output.all
        for (i, recorded) in recording.states.enumerated() {
            guard i < now.count else {
                write("replay \(file): the recording has \(recording.states.count) states, the run now \(now.count): state \(i) (line \(recorded.line)) never came")
                return 1
            }
            if !StateDiff.same(recorded.state, now[i]) {
                write("replay \(file): state \(i) differs from line \(recorded.line) (- recorded, + now):")
                for line in StateDiff.lines(expected: recorded.state, actual: now[i]) { write(line) }
                write("run `moonflow replay \(file) --update` to accept the new behaviour")
                return 1
            }
        }
        if now.count > recording.states.count {
            write("replay \(file): the run now goes through \(now.count) states, the recording \(recording.states.count); the first new one:")
            write("+ state = \(StateDiff.render(now[recording.states.count]))")
            return 1
        }
        if status == 0 { write("replay \(file): identical (\(recording.inputs) inputs, \(now.count) states)") }
        return status
    }

    /// Reads the recording.
    /// - Throws: `BadRecording` naming the file, the line and what a recording looks like.
    func read() throws -> Recording {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw BadRecording(description: "cannot read \(file): it does not exist or is not readable; make one with moonflow run PATH --record \(file)")
        }
        var recording = Recording()
        let text = String(decoding: data, as: UTF8.self)
        for (i, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let n = i + 1
            if line.trimmingCharacters(in: .whitespaces).isEmpty { recording.inputLines.append(""); continue }
            let value: LuaValue
            do { value = try LuaValue(json: String(line)) } catch {
                throw BadRecording(description: "\(file):\(n): not JSON (\(error)); a recording is JSON Lines written by moonflow run --record")
            }
            if n == 1 {
                guard value["record"]?.stringValue == SessionRecorder.kind, let path = value["path"]?.stringValue else {
                    throw BadRecording(description: "\(file):1: not a moonflow recording (the first line must be the {\"record\":\"\(SessionRecorder.kind)\",...} header); make one with moonflow run PATH --record \(file)")
                }
                if let format = value["format"], format != .integer(Int64(SessionRecorder.format)) {
                    throw BadRecording(description: "\(file):1: recording format \(format) is not \(SessionRecorder.format), the one this moonflow reads; record the session again")
                }
                recording.path = path
                recording.feature = value["feature"]?.stringValue ?? "?"
                if case .integer(let v)? = value["version"] { recording.version = v }
                recording.inputLines.append("")
                continue
            }
            if let action = value["input"] {
                guard case .integer(let t)? = value["t"], t >= 0 else {
                    throw BadRecording(description: "\(file):\(n): an input line needs its time \"t\" in ms (an integer, 0 or more)")
                }
                let json = (try? action.json(sortedKeys: true, root: "input")) ?? "{}"
                recording.inputLines.append("{\"at\":\(t),\"send\":\(json)}")
                recording.inputs += 1
                recording.actions.append((n, action))
                continue
            }
            recording.inputLines.append("")
            if let service = value["service"]?.stringValue {
                guard case .integer(let call)? = value["call"], case .table(let values)? = value["values"] else {
                    throw BadRecording(description: "\(file):\(n): a service line needs \"call\" (an integer) and \"values\" (a list)")
                }
                recording.services[service, default: [:]][Int(call)] = ServiceOutcome(values: values.array, error: value["error"]?.stringValue)
                continue
            }
            switch value["event"]?.stringValue {
            case "state":
                guard let state = value["state"] else {
                    throw BadRecording(description: "\(file):\(n): a state event without a whole \"state\"; recordings keep whole states (record without --state patch)")
                }
                recording.states.append((n, state))
            case "mutation":
                if let m = value["mutation"] { recording.mutations.append((n, m)) }
            default: break
            }
        }
        guard !recording.path.isEmpty else {
            throw BadRecording(description: "\(file) is empty; make a recording with moonflow run PATH --record \(file)")
        }
        return recording
    }

    /// Recorded actions and mutations the feature's current schemas refuse, one line each.
    func validate(_ recording: Recording) -> [String] {
        guard let host = try? FeatureHost(configuration: .init(searchPaths: FeatureRun.searchPaths(for: recording.path),
                                                               profile: profile, timeLimitMs: timeLimitMs,
                                                               memoryLimitMB: memoryLimitMB, clock: .virtual)),
              (try? HostOwnedProcess.install(in: host.lua, command: "replay") { _, _ in }) != nil,
              let (definition, _) = try? host.loadDefinition(recording.path), definition.kind == .feature
        else { return [] }  // the run itself reports a plugin that does not load
        var out: [String] = []
        if definition.version != recording.version {
            out.append("\(file):1: recorded with \(recording.feature) version \(recording.version), the code is now version \(definition.version)")
        }
        for (line, action) in recording.actions {
            do { _ = try definition.actions.validate(action) } catch {
                out.append("\(file):\(line): the recorded action no longer validates: \(error)")
            }
        }
        for (line, mutation) in recording.mutations {
            do { _ = try definition.mutations.validate(mutation) } catch {
                out.append("\(file):\(line): the recorded mutation no longer validates: \(error)")
            }
        }
        return out
    }
}
