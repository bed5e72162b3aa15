import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowLua
import MoonflowSQLite
import Streams

/// One `moonflow run`: loads a plugin, feeds it JSON Lines input on the real
/// or the virtual clock, and prints its events.
///
///     var options = FeatureRun.Options(path: "plugins/counter")
///     options.clock = .virtual
///     options.format = .jsonl
///     let status = FeatureRun(options: options, input: InputLines(file: "in.jsonl")).run()
package final class FeatureRun: @unchecked Sendable {
    package struct Options: Sendable {
        package var path: String
        package var format: OutputFormat = .pretty
        package var clock: FeatureHost.Clock = .real
        package var untilMs: Int?
        package var timeLimitMs: Int64? = 1000
        package var memoryLimitMB: Int? = 512
        package var profile: LuaState.Profile = .trusted
        package var color = false
        /// Reload on every change to the plugin's files, and run until SIGINT or SIGTERM (real clock).
        package var watch = false
        /// jsonl: `state` events after the first carry a JSON Patch (`--state patch`).
        package var statePatches = false
        /// Where declared SQLite repositories keep their files (`--db`); nil: fresh in-memory ones.
        package var repositoryStorage: RepositoryStorage? = .asDeclared
        /// Who else sees the events and inputs (`--record`, `--inspect`).
        package var observers: [any RunObserver] = []
        /// Records the Swift services' answers (`--record`), or gives them from a recording (`replay`).
        package var serviceTap: ServiceTap?
        /// Keep running after the input ends, until SIGINT or SIGTERM (real clock; `--inspect`).
        package var keepsRunning = false
        package init(path: String) { self.path = path }
    }

    let options: Options
    let input: InputLines
    let write: @Sendable (String) -> Void
    private let printer: EventPrinter
    var failed = false
    let lock = NSLock()
    private var start = Date()

    /// - Parameters:
    ///   - input: the action lines (a file, standard input, or nothing).
    ///   - write: where lines go (standard output by default).
    package init(options: Options, input: InputLines, write: @escaping @Sendable (String) -> Void = FeatureRun.stdout) {
        self.options = options
        self.input = input
        self.write = write
        self.printer = EventPrinter(format: options.format, color: options.color, statePatches: options.statePatches)
    }

    package static let stdout: @Sendable (String) -> Void = { line in
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    var host: FeatureHost!
    var feature: RunningFeature!
    /// The run's own listener on the feature, kept for as long as the run lives. (Dropped, it
    /// would go on listening, but the side table of its weak reference to the outlet, which the
    /// runtime points to only through the outlet's shifted refcount word, would look leaked to
    /// LeakSanitizer when a signal ends the process with the run still alive.)
    private var observation: Disposable?
    var watcher: FileWatcher?
    /// Each file's stamp (time and size) as it was when a save last reloaded it; the watcher's thread alone uses it.
    var reloadedStamps: [String: String] = [:]

    private var now: Int {
        if let test = host?.testScheduler { return test.now }  // no host yet: an error while making it
        return Int(Date().timeIntervalSince(start) * 1000)
    }

    func emit(_ event: FeatureEvent, asInput: Bool = false) {
        var event = event
        if case .error(let message, let location) = event { event = .error(message: FlagHints.add(to: message), location: location) }
        lock.lock(); defer { lock.unlock() }
        if case .error = event, !(asInput && input.isInteractive) { failed = true }
        // Mutation and state events come only from the feature's own delivery, on the state
        // executor, where the composite's source is set; input errors come from this thread.
        var from: String?
        switch event {
        case .mutation, .state: from = (feature as? LuaComposite)?.sourceOfCurrentEvent
        default: from = nil
        }
        var changes: [StateChange]?
        var stateJSON: (() throws -> [UInt8])?
        if case .state = event, let single = feature as? LuaFeature {
            changes = single.deliveredChanges
            stateJSON = single.stateJSON
        }
        write(printer.render(event, t: now, from: from, changes: changes, stateJSON: stateJSON, asInput: asInput))
        if !options.observers.isEmpty {
            let cause = feature?.eventCause
            for observer in options.observers { observer.observe(event, t: now, cause: cause) }
        }
    }

    /// A bad input line. At the prompt a typo is not a failure of the session (its exit
    /// status stays 0); in piped input it is. Printed at the level of an action, not
    /// under the one before it.
    private func inputError(_ message: String, line: Int) {
        let event = FeatureEvent.error(message: message, location: "\(input.name):\(line)")
        emit(event, asInput: true)
    }

    /// Runs to the end of input and of all work (or `untilMs`).
    /// - Returns: 0 when nothing failed, 1 after a script error or a bad input line.
    package func run() -> Int32 {
        if options.watch || options.keepsRunning { installSignalHandlers() }
        do {
            host = try FeatureHost(configuration: .init(
                searchPaths: FeatureRun.searchPaths(for: options.path), profile: options.profile,
                timeLimitMs: options.timeLimitMs, memoryLimitMB: options.memoryLimitMB, clock: options.clock,
                repositoryFiles: options.repositoryStorage.map { SQLiteRepositoryFiles(storage: $0) }))
            host.bridge.serviceTap = options.serviceTap
            // The tool names files as they were given on its command line.
            host.bridge.locationRoots = []
            // A failed reload is reported by the watch itself, once the files have settled.
            host.reportsReloadFailures = false
            // os.exit is an error, print and io.write log events: the host owns the process and stdout.
            // Weak: a feature (and its Lua state) may outlive the run that made it.
            try HostOwnedProcess.install(in: host.lua, command: "run") { [weak self] text, location in
                self?.emit(.log(message: text, location: location))
            }
            feature = try host.load(options.path)
        } catch {
            let (message, location) = LuaErrorReport.describe(error, fallback: nil)
            emit(.error(message: message, location: location))
            return 1
        }
        start = Date()
        if input.isInteractive {
            // On standard error, so a jsonl run at a prompt still prints only JSON on standard output.
            FileHandle.standardError.write(Data((banner + "\n").utf8))
            prepareReader()
        }
        if !options.observers.isEmpty {
            let version = (feature as? LuaFeature)?.definition.version ?? (feature as? LuaComposite)?.definition.version ?? 1
            let description = RunDescription(name: feature.name, version: version, path: options.path,
                                             actions: actionSchema, clock: options.clock)
            for observer in options.observers { observer.started(description, dispatch: Dispatcher(run: self)) }
        }
        observation = host.perform { feature.outlet.add { [weak self] event in self?.emit(event) } }
        // Armed before the first state is printed: a save right after it is seen.
        if options.watch {
            do { try startWatching() } catch {
                emit(.error(message: "\(error)", location: nil))
                return 1
            }
        }
        host.perform { feature.start() }
        switch options.clock {
        case .virtual: runVirtual()
        case .real: runReal()
        }
        reportStoppedAtUntil()
        return failed ? 1 : 0
    }

    /// `--until` ended the run: say what was still in flight, if anything, so a
    /// run that stopped early does not look finished.
    private func reportStoppedAtUntil() {
        guard let until = options.untilMs, !options.watch, !host.perform({ feature.isIdle }) else { return }
        FileHandle.standardError.write(Data("moonflow: --until \(until) ended the run at \(now) ms with work in flight: \(inFlightSummary)\n".utf8))
    }

    /// Plugins beside PATH are found by name (`mf.compose` children, interactors).
    /// Kept relative when PATH is, so `file:line` in messages and tracebacks
    /// reads the same on every checkout (golden outputs depend on it).
    package static func searchPaths(for path: String) -> [String] {
        var parent = (path as NSString).deletingLastPathComponent
        if path.hasSuffix(".lua") { parent = (parent as NSString).deletingLastPathComponent }
        var paths: [String] = []
        for dir in [parent, "plugins"] where !dir.isEmpty {
            let normal = (dir as NSString).standardizingPath
            if !paths.contains(where: { ($0 as NSString).standardizingPath == normal }) { paths.append(dir) }
        }
        return paths
    }

    // MARK: - Virtual clock

    private func runVirtual() {
        let test = host.testScheduler!
        host.settle()
        var lineNumber = 0
        while let line = input.next() {
            lineNumber += 1
            guard let (at, action) = parse(line, lineNumber) else { continue }
            if let at {
                if let until = options.untilMs, at > until { host.advance(to: until); return }
                if at > test.now { host.advance(to: at) }
            }
            send(action, line: lineNumber)
            host.settle()
        }
        // Input is exhausted: run until nothing is scheduled or in flight.
        if !host.runUntilIdle(until: options.untilMs) { finishVirtual() }
    }

    // MARK: - Real clock

    private func runReal() {
        var lineNumber = 0
        while let line = input.next() {
            lineNumber += 1
            guard let (at, action) = parse(line, lineNumber) else { continue }
            if let at {
                if let until = options.untilMs, at > until { waitIdle(until: until); return }
                let due = start.addingTimeInterval(Double(at) / 1000)
                if due > Date() { Thread.sleep(until: due) }
            }
            send(action, line: lineNumber)
            // What the action did without waiting for time (streams of values at hand,
            // `mf.compose` children's mutations) is reduced before the next line, in the
            // order the virtual clock reduces it.
            (host.scheduler as? QueueScheduler)?.drain()
            if input.isInteractive { waitIdle(until: nil, maxSeconds: 2) }
        }
        if options.keepsRunning && !options.watch && input.isInteractive {
            FileHandle.standardError.write(Data("moonflow: the input ended; the inspector stays until Ctrl-C\n".utf8))
        }
        if options.watch || options.keepsRunning { waitForSignal() }
        waitIdle(until: options.untilMs)
    }

    /// Waits until the feature is idle, the clock reaches `until`, or `maxSeconds` pass.
    /// At the end of input, a wait longer than a second at a terminal says what it waits for.
    private func waitIdle(until: Int?, maxSeconds: Double? = nil) {
        let limit = maxSeconds.map { Date().addingTimeInterval($0) }
        let announceAt = maxSeconds == nil && isatty(STDERR_FILENO) != 0 ? Date().addingTimeInterval(1) : nil
        var announced = false
        while true {
            if let until, now >= until { return }
            if let limit, Date() > limit { return }
            let idle = host.perform { feature.isIdle } && host.bridge.pending.inFlight == 0
            if idle { return }
            if let announceAt, !announced, Date() > announceAt {
                announced = true
                let end = until.map { "until the clock reaches \($0) ms" } ?? "until it finishes; Ctrl-C stops the run, --until MS ends it at MS"
                FileHandle.standardError.write(Data("moonflow: input ended; waiting for work in flight (\(inFlightSummary)) \(end)\n".utf8))
            }
            Thread.sleep(forTimeInterval: 0.002)
        }
    }

    // MARK: - Input

    /// Parses a line (see `InputLine`): returns a timed or untimed action, or nil after
    /// reporting a bad line or carrying out a prompt command.
    private func parse(_ line: String, _ n: Int) -> (Int?, LuaValue)? {
        do {
            switch try InputLine.parse(line, shorthand: input.allowsShorthand, actions: actionSchema) {
            case nil:
                return nil
            case .command(let command):
                perform(command)
                return nil
            case .action(let action, let at):
                if let at {
                    // The virtual clock is exact; on the real one, a line is late when it goes back
                    // before an earlier timed line (not by the milliseconds reading takes).
                    let clock = host.testScheduler?.now ?? latestTimedLine
                    if at < clock {
                        // Sent at once, as late as it is: say so rather than reorder the input.
                        emit(.log(message: "\"at\":\(at) is before the run's clock (\(clock) ms), so the action is sent now; timed lines go in time order",
                                  location: "\(input.name):\(n)"))
                    }
                    latestTimedLine = max(latestTimedLine, at)
                }
                return (at, action)
            }
        } catch {
            inputError(error.message, line: n)
            return nil
        }
    }

    // MARK: - The prompt

    /// Carries out a prompt command.
    private func perform(_ command: PromptCommand) {
        switch command {
        case .help:
            write(helpText)
        case .advance(let ms):
            guard let test = host.testScheduler else {
                write(":advance moves the virtual clock, and this run is on the real clock, where time passes by itself; start the run with --clock virtual to move time by hand")
                return
            }
            let target = test.now.saturatingAdd(ms)
            let fired = test.firedTimerCount
            host.advance(to: options.untilMs.map { min($0, target) } ?? target)
            let count = test.firedTimerCount - fired
            write("clock at \(test.now) ms; \(count) timer\(count == 1 ? "" : "s") fired")
        case .quit:
            input.end()
        case .reload:
            reload(changed: nil, noticed: Date())
        case .restart:
            restart()
        case .state:
            write(FeatureRun.pretty(feature.state))
        case .run:
            if let test = host.testScheduler {
                // To the next point where the feature is idle or nothing is scheduled (an
                // `mf.interval` never idles: stop after a minute of virtual time).
                let limit = test.now.saturatingAdd(60_000)
                host.settle()
                while !host.perform({ feature.isIdle }), let next = test.nextDueTime, next <= limit {
                    if let until = options.untilMs, next > until { host.advance(to: until); break }
                    host.advance(to: next)
                }
                if !host.perform({ feature.isIdle }) { write("still busy at \(test.now) ms: \(inFlightSummary)") }
            } else {
                waitIdle(until: options.untilMs, maxSeconds: 10)
            }
        }
    }

    /// `help`: the commands and the declared actions with their fields.
    var helpText: String {
        var lines = ["commands:",
                     "  ACTION key=value ...   send an action (a bare value fills its only field; quote text with spaces)",
                     "  {\"type\":...}           send an action as JSON",
                     "  help                   this list"]
        if options.clock == .virtual {
            lines += ["  :advance MS            move the virtual clock on by MS",
                      "  :run                   run the virtual clock until the feature is idle"]
        }
        lines += ["  :reload                load the plugin's code again, keeping the state",
                  "  :restart               load it again and start over from its initial state",
                  "  :state                 print the whole state",
                  "  :quit or Ctrl-D        end the input (Tab completes, Up recalls earlier lines)"]
        if let actions = actionSchema {
            lines.append("actions:")
            for name in actions.names {
                let fields = (actions.shapes[name] ?? [:]).sorted { $0.key < $1.key }
                    .map { "\($0.key)=\($0.value.type.rawValue)\($0.value.optional ? "?" : "")" }
                lines.append("  " + ([name] + fields).joined(separator: " "))
            }
        } else {
            lines.append("actions: whatever \(feature.name)'s route sends to a child")
        }
        return lines.joined(separator: "\n")
    }

    /// The prompt's first line: what runs, on which clock, how to get help.
    private var banner: String {
        let clock = options.clock == .virtual
            ? "the virtual clock (it moves only with :advance MS and :run)"
            : "the real clock"
        return "moonflow: \(feature.name) on \(clock); type help for the actions and commands, :quit or Ctrl-D to end"
    }

    /// Tells the prompt what Tab completes.
    private func prepareReader() {
        guard let reader = input.reader else { return }
        var actions: [String: [String]] = [:]
        if let schema = actionSchema {
            for (name, fields) in schema.shapes { actions[name] = fields.keys.sorted() }
        }
        let commands = (options.clock == .virtual ? ["help", ":advance", ":run"] : ["help"]) + [":reload", ":state", ":quit"]
        reader.setCompletions(actions: actions, commands: commands)
    }

    /// What is still running, for messages: `save #2, load #3` or `nothing`.
    private var inFlightSummary: String {
        let flights = host.perform { feature.inFlight.map(\.summary) }
        return flights.isEmpty ? "nothing" : flights.joined(separator: ", ")
    }

    /// The end of a virtual-clock run once nothing is scheduled: with work still in
    /// flight (an `mf.never()`, a stream waiting on nothing) the clock runs on to
    /// `--until`, as the real clock would wait; without `--until` nothing can move it.
    private func finishVirtual() {
        guard !host.perform({ feature.isIdle }) else { return }
        if let until = options.untilMs {
            host.advance(to: until)
        } else {
            FileHandle.standardError.write(Data("moonflow: the run ends at \(now) ms with work in flight that nothing scheduled will finish (\(inFlightSummary)); pass --until MS to run the clock on to MS\n".utf8))
        }
    }

    /// The latest `at` of the timed lines read so far.
    private var latestTimedLine = 0

    /// The declared actions (nil under `mf.compose`, whose `route` decides).
    var actionSchema: Schema? { (feature as? LuaFeature)?.definition.actions }

    private func send(_ action: LuaValue, line: Int) {
        do {
            try dispatch(action)
        } catch {
            inputError(String(describing: error), line: line)
        }
    }
}

extension FeatureRun {
    /// Sends `action` to the feature, telling the observers first.
    /// - Throws: the validation error; nothing is sent.
    func dispatch(_ action: LuaValue) throws {
        try host.perform {
            if !options.observers.isEmpty {
                let t = now
                lock.withLock { for observer in options.observers { observer.input(action, t: t) } }
            }
            try feature.send(action)
        }
    }

    /// The run as its observers see it: actions from another thread (the inspector's page).
    struct Dispatcher: RunDispatcher {
        /// Weak: the observers keep their dispatcher, and the run keeps its observers.
        weak var run: FeatureRun?
        func dispatch(_ action: LuaValue) throws {
            guard let run else { throw HostError("the run is over: nothing takes actions any more") }
            guard run.options.clock == .real else {
                throw HostError("sending from elsewhere needs the real clock: the virtual one moves only with the input")
            }
            try run.dispatch(action)
        }
        var inFlight: [FeatureFlight] {
            guard let run, run.options.clock == .real else { return [] }
            return run.host.perform { run.feature.inFlight }
        }
        func restart() throws {
            guard let run else { throw HostError("the run is over: there is nothing to restart") }
            guard run.options.clock == .real else {
                throw HostError("restarting from elsewhere needs the real clock: the virtual one moves only with the input")
            }
            try run.host.restart(run.feature)
        }
    }
}
