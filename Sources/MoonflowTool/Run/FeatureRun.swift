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
///     let status = FeatureRun(options: options, input: InputSource(file: "in.jsonl")).run()
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
    let input: InputSource
    let write: @Sendable (String) -> Void
    private let printer: EventPrinter
    var failed = false
    let lock = NSLock()
    private var start = Date()

    /// - Parameters:
    ///   - input: the action lines (a file, standard input, or nothing).
    ///   - write: where lines go (standard output by default).
    package init(options: Options, input: InputSource, write: @escaping @Sendable (String) -> Void = FeatureRun.stdout) {
        self.options = options
        self.input = input
        self.write = write
        self.printer = EventPrinter(format: options.format, color: options.color, statePatches: options.statePatches)
    }

    package static let stdout: @Sendable (String) -> Void = { line in
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// The host and feature the run drives now. A stuck Lua state (`FeatureHost.isStuck`)
    /// is left behind with its thread, and both are replaced (`rebuildStuck`), so any thread
    /// reads them under `bindingLock`.
    var host: FeatureHost! {
        get { bindingLock.withLock { _host } }
        set { bindingLock.withLock { _host = newValue } }
    }
    var feature: RunningFeature! {
        get { bindingLock.withLock { _feature } }
        set { bindingLock.withLock { _feature = newValue } }
    }
    private var _host: FeatureHost!
    private var _feature: RunningFeature!
    private let bindingLock = NSLock()
    /// Bumped when a stuck state is left behind: its events, if it ever comes back, are dropped.
    private var generation = 0
    /// Input lines read so far (the line numbers in messages go on across a rebuild).
    private var linesRead = 0
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

    func emit(_ event: FeatureEvent, asInput: Bool = false, generation from: Int? = nil) {
        var event = event
        if case .error(let message, let location) = event { event = .error(message: FlagHints.add(to: message), location: location) }
        lock.lock(); defer { lock.unlock() }
        if let from, from != generation { return }  // a stuck state's, left behind
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
            // The code's own, after a reload too: a declared list's first item is an `add`.
            if options.statePatches { printer.declaredState = single.definition.declaredState }
        }
        write(printer.render(event, t: now, from: from, changes: changes, stateJSON: stateJSON, asInput: asInput))
        // A bad input line is the input's, not the feature's: a recording or the inspector
        // that kept it would expect it again where nothing was sent.
        if !options.observers.isEmpty && !asInput {
            let cause = feature?.eventCause
            let causeID = (feature as? BridgedFeature)?.eventCauseID
            for observer in options.observers { observer.observe(event, t: now, cause: cause, causeID: causeID) }
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
            host = try makeHost(generation: 0)
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
                                             actions: actionSchema, clock: options.clock, now: { [weak self] in self?.now ?? 0 })
            for observer in options.observers { observer.started(description, dispatch: Dispatcher(run: self)) }
        }
        observation = host.perform { feature.outlet.add { [weak self] event in self?.emit(event, generation: 0) } }
        // Armed before the first state is printed: a save right after it is seen.
        if options.watch {
            do { try startWatching() } catch {
                emit(.error(message: "\(error)", location: nil))
                return 1
            }
        }
        host.perform { feature.start() }
        drive()
        return lock.withLock { failed } ? 1 : 0
    }

    // MARK: - A stuck state

    /// Feeds the input to the feature on a thread of its own while this one watches for a
    /// stuck Lua state: a call that ran on past its time limit in code no hook reaches (a
    /// blocking C or Swift function). Then the feature is rebuilt from its source with its
    /// last state, in a new host, and the run goes on with the rest of the input. On the
    /// virtual clock the input's thread runs the Lua code itself and is stuck with it: a new
    /// one takes over. On the real clock it only waits on the state's queue, and its waits
    /// end when the state is stuck (`performUnlessStuck`): it goes on with the new host.
    private func drive() {
        while true {
            let finished = DispatchSemaphore(value: 0)
            let (host, generation) = bindingLock.withLock { (_host!, self.generation) }
            // Weak: the run is let go as soon as it returns (the thread may take a moment to end).
            let driver = Thread { [weak self] in
                self?.feedInput(generation: generation)
                finished.signal()
            }
            driver.name = "moonflow input"
            driver.stackSize = 16 << 20  // Lua's C calls nest as deep as on the main thread
            driver.start()
            var current = host
            while true {
                if finished.wait(timeout: .now() + .milliseconds(20)) == .success { return }
                AbandonedStates.shared.release()  // what a stuck call left behind, once it returned
                guard current.isStuck else { continue }
                guard let rebuilt = rebuildStuck() else { return }
                current = rebuilt
                if options.clock == .virtual { break }  // the stuck thread is left behind
            }
        }
    }

    /// The input, to its end, on the clock the options name.
    private func feedInput(generation: Int) {
        switch options.clock {
        case .virtual: runVirtual(generation: generation)
        case .real: runReal()
        }
        if isCurrent(generation) { reportStoppedAtUntil() }
    }

    /// Whether `generation` is still the run's (no stuck state was left behind since).
    func isCurrent(_ generation: Int) -> Bool { lock.withLock { self.generation == generation } }

    /// Leaves the stuck host behind and loads the plugin again in a new one, with the state
    /// the feature last had. Returns the new host, or nil when that failed too (the run ends).
    private func rebuildStuck() -> FeatureHost? {
        let (stuckHost, stuckFeature, oldObservation) = bindingLock.withLock { (_host!, _feature!, observation) }
        let kept = stuckFeature.state
        let clock = stuckHost.testScheduler?.now
        let generation = lock.withLock { self.generation += 1; return self.generation }
        // Kept until the stuck call returns: freeing the state would touch it under that call.
        let stuckLua = stuckHost.lua
        let room = AbandonedStates.shared.keep([stuckHost, stuckFeature as AnyObject] + (oldObservation.map { [$0 as AnyObject] } ?? []),
                                               while: { stuckLua.isInCall })
        let limit = options.timeLimitMs.map { "its time limit of \($0) ms" } ?? "its time limit"
        guard room else {
            emit(.error(message: "a call of \(stuckFeature.name) ran on past \(limit) in code that cannot be interrupted (a blocking C or Swift function such as os.execute or io.read), and \(AbandonedStates.shared.limit) Lua states stuck so are left behind now, the most a run keeps (each holds its memory until its call returns): the run ends", location: nil))
            return nil
        }
        emit(.error(message: "a call of \(stuckFeature.name) ran on past \(limit) in code that cannot be interrupted (a blocking C or Swift function such as os.execute or io.read): its Lua state is left behind (freed once the call returns), and the feature is loaded again from \(options.path) with its last state", location: nil))
        // Loading runs the plugin's code, which may block as well: on a thread of its own.
        let outcome = Locked<Result<(FeatureHost, RunningFeature), any Error>?>(nil)
        let building = Locked<FeatureHost?>(nil)
        let path = options.path
        let ended = StuckWatch.run(isStuck: { building.withLock { $0 }?.isStuck == true }) { [weak self] in
            let built = Result {
                guard let self else { throw HostError("the run is over") }
                let host = try self.makeHost(generation: generation)
                building.withLock { $0 = host }
                if let clock { host.advance(to: clock) }
                return (host, try host.load(path, initial: kept))
            }
            outcome.withLock { $0 = built }
        }
        if !ended {
            if let stuck = building.withLock({ $0 }) {
                let stuckLua = stuck.lua
                AbandonedStates.shared.keep([stuck], while: { stuckLua.isInCall })
            }
            emit(.error(message: "loading \(options.path) again got stuck as well (its code blocks as it loads); the run ends", location: nil))
            return nil
        }
        let host: FeatureHost, feature: RunningFeature
        do { (host, feature) = try outcome.withLock { $0 }!.get() } catch {
            let (message, location) = LuaErrorReport.describe(error, fallback: nil)
            emit(.error(message: "loading \(options.path) again failed, and the run ends: \(message)", location: location))
            return nil
        }
        let listener = host.perform { feature.outlet.add { [weak self] event in self?.emit(event, generation: generation) } }
        bindingLock.withLock {
            _host = host
            _feature = feature
            observation = listener
        }
        if watcher != nil {
            // The old watcher's thread may be waiting on the stuck state (a reload): a new one watches.
            watcher?.stop()
            do { try startWatching() } catch { emit(.error(message: "\(error)", location: nil)) }
        }
        host.perform { feature.start() }
        return host
    }

    /// A host as the options ask for, its events (logs) tagged with `generation`.
    private func makeHost(generation: Int) throws -> FeatureHost {
        let host = try FeatureHost(configuration: .init(
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
            self?.emit(.log(message: text, location: location), generation: generation)
        }
        return host
    }

    /// `--until` ended the run: say what was still in flight, if anything, so a
    /// run that stopped early does not look finished.
    private func reportStoppedAtUntil() {
        guard let until = options.untilMs, !options.watch, !isIdle else { return }
        FileHandle.standardError.write(Data("moonflow: --until \(until) ended the run at \(now) ms with work in flight: \(inFlightSummary)\n".utf8))
    }

    /// Plugins beside PATH are found by name (`mf.compose` children, interactors).
    /// Kept relative when PATH is, so `file:line` in messages and tracebacks
    /// reads the same on every checkout (golden outputs depend on it).
    /// Every form of a path gives the same folders: `.` inside `plugins/counter` gives
    /// `..`, as do `./`, `./init.lua` and `init.lua`. A plugin given by name (no such file
    /// here) has no folder of its own to add.
    package static func searchPaths(for path: String) -> [String] {
        var parent: String?
        if FileManager.default.fileExists(atPath: path) {
            let folder = PathText.normalized(path).hasSuffix(".lua") ? PathText.parent(of: path) : path
            parent = PathText.parent(of: folder)
        }
        var paths: [String] = []
        for dir in [parent, "plugins"].compactMap({ $0 }) {
            let normal = PathText.normalized(dir)
            if !paths.contains(where: { PathText.normalized($0) == normal }) { paths.append(normal) }
        }
        return paths
    }

    // MARK: - Virtual clock

    /// On the thread that reads the input, which runs the Lua code too; it stops at once
    /// when a stuck state was left behind (`generation` is no longer the run's).
    private func runVirtual(generation: Int) {
        let host = self.host!
        let test = host.testScheduler!
        host.settle()
        while isCurrent(generation), let line = input.next() {
            let lineNumber = lock.withLock { linesRead += 1; return linesRead }
            guard let (at, action) = parse(line, lineNumber) else { continue }
            if let at {
                if let until = options.untilMs, at > until { host.advance(to: until); return }
                if at > test.now { host.advance(to: at) }
            }
            send(action, line: lineNumber)
            host.settle()
        }
        // Input is exhausted: run until nothing is scheduled or in flight.
        if isCurrent(generation), !host.runUntilIdle(until: options.untilMs) { finishVirtual() }
    }

    // MARK: - Real clock

    private func runReal() {
        while let line = input.next() {
            let lineNumber = lock.withLock { linesRead += 1; return linesRead }
            guard let (at, action) = parse(line, lineNumber) else { continue }
            if let at {
                if let until = options.untilMs, at > until { waitIdle(until: until); return }
                let due = start.addingTimeInterval(Double(at) / 1000)
                if due > Date() { Thread.sleep(until: due) }
            }
            send(action, line: lineNumber)
            // What the action did without waiting for time (streams of values at hand,
            // `mf.compose` children's mutations) is reduced before the next line, in the
            // order the virtual clock reduces it. (Not past a stuck state.)
            // At the prompt, the next line is read at once: what a timer, a stream or a
            // service brings later is printed above the line being typed (`latest`,
            // debounce and `:restart` can be tried by hand while work is in flight).
            drainUnlessStuck()
        }
        if options.keepsRunning && !options.watch && input.isInteractive {
            FileHandle.standardError.write(Data("moonflow: the input ended; the inspector stays until Ctrl-C\n".utf8))
        }
        if options.watch || options.keepsRunning { waitForSignal() }
        waitIdle(until: options.untilMs)
    }

    /// Whether the feature has nothing queued or running (a stuck state counts as idle:
    /// nothing will come of it).
    private var isIdle: Bool {
        let feature = self.feature!
        return (try? host.performUnlessStuck { feature.isIdle }) ?? true
    }

    /// `QueueScheduler.drain`, whose waits end when the state is stuck.
    private func drainUnlessStuck() {
        let host = self.host!
        guard let scheduler = host.scheduler as? QueueScheduler else { return }
        var rounds = 0
        while scheduler.hasImmediateWork, rounds < 10_000, (try? host.performUnlessStuck {}) != nil { rounds += 1 }
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
            let idle = isIdle && host.bridge.pending.inFlight == 0
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
                while !isIdle, let next = test.nextDueTime, next <= limit {
                    if let until = options.untilMs, next > until { host.advance(to: until); break }
                    host.advance(to: next)
                }
                if !isIdle { write("still busy at \(test.now) ms: \(inFlightSummary)") }
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
                    .map { "\($0.key)=\($0.value.spelled)" }
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
        let feature = self.feature!
        let flights = (try? host.performUnlessStuck { feature.inFlight.map(\.summary) }) ?? []
        return flights.isEmpty ? "nothing" : flights.joined(separator: ", ")
    }

    /// The end of a virtual-clock run once nothing is scheduled: with work still in
    /// flight (an `mf.never()`, a stream waiting on nothing) the clock runs on to
    /// `--until`, as the real clock would wait; without `--until` nothing can move it.
    private func finishVirtual() {
        guard !isIdle else { return }
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
    ///
    /// An action that finds the state stuck before it started waits for the rebuilt
    /// feature and goes to it (one that got stuck itself is not sent again).
    func dispatch(_ action: LuaValue) throws {
        let started = Locked(false)
        let deadline = Date().addingTimeInterval(10)
        while true {
            let (host, feature) = bindingLock.withLock { (_host!, _feature!) }
            let sent = try host.performUnlessStuck { [self] in
                started.withLock { $0 = true }
                if !options.observers.isEmpty {
                    // A refused action is not an input: a recording or the inspector's re-run
                    // would send it again.
                    try (feature as? LuaFeature)?.check(action)
                    let t = now
                    lock.withLock { for observer in options.observers { observer.input(action, t: t) } }
                }
                try feature.send(action)
                return true
            }
            if sent != nil || started.withLock({ $0 }) { return }
            // Stuck before it started: the run rebuilds the feature in a moment.
            while self.host === host {
                guard Date() < deadline else { throw FeatureError.stuck(feature: feature.name, action: action) }
                Thread.sleep(forTimeInterval: 0.005)
            }
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
