import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import MoonflowRepositories
import MoonflowSQLite
import Streams

/// One `moonflow run`: loads a plugin, feeds it JSON Lines input on the real
/// or the virtual clock, and prints its events.
///
///     var options = FeatureRun.Options(path: "plugins/counter")
///     options.clock = .virtual
///     options.format = .jsonl
///     let status = FeatureRun(options: options, input: InputSource(file: "in.jsonl")).run()
///
/// This file holds the options, the host and feature the run drives and `run()`; each other
/// concern has a file of its own beside it: `+Events` (what it prints and tells its
/// observers), `+Input` (the input's lines), `+Prompt` (the prompt's commands), `+VirtualClock`
/// and `+RealClock`, `+Stuck` (the input's thread and the rebuild past a stuck state),
/// `+Dispatch` (sends, from the input and the observers), `+Watch` (reloads on a save),
/// `+Signals` (what ends a run that waits) and `+Rerun` (the inspector's `rerun`).
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
        /// Called with each host the run makes (its generation: 0, then one per rebuild past a
        /// stuck state) before the plugin loads, on the thread that will load it: `--debug`
        /// serves its Lua state, and `--debug-wait` waits there for the editor.
        package var prepareHost: (@Sendable (FeatureHost, Int) -> Void)?
        /// Called after each reload that took (`--watch`, `:reload`): the debugger places its
        /// breakpoints again in the new text.
        package var reloaded: (@Sendable () -> Void)?
        /// Opens a past step in the debugger (`--inspect` with `--debug`): the inspector's
        /// `debug` (see `RunDispatcher.openInDebugger`); nil: refused, saying how to debug one.
        package var openInDebugger:
            (@Sendable (_ inputLines: [String], _ answers: [String], _ action: Int) throws -> Void)?
        /// The seed of the plugins' random numbers (`--seed`); nil: `FeatureInputs.defaultSeed`
        /// on the virtual clock, a fresh one (recorded under `--record`) on the real clock.
        package var seed: Int64?
        /// Whether a `--record` recorder gets every value of time the plugins read, whatever the
        /// clock (`replay --update` of a recording that holds them); on the real clock it always does.
        package var recordsReads = false
        /// The values of time a recording holds, handed back in order by kind (`replay`).
        package var readsFeed: (@Sendable (String) -> LuaValue?)?
        /// Whether the run can be repeated from its load (`travel()`): a virtual-clock run under
        /// the debugger keeps every input line it reads.
        package var repeatable = false
        /// The most inputs (input lines and service or repository calls' outcomes) a repeatable
        /// run keeps to go back (`--debug-history`); past it the run lets them all go, tells
        /// `historyDropped` the input line it had read, and cannot go back any more.
        package var travelHistory = FeatureRun.defaultTravelHistory
        package var historyDropped: (@Sendable (_ lines: Int) -> Void)?
        /// Told the number of each action (from 1, in input order, again from 1 in a re-run) as
        /// it is sent, on the state's thread: a copy made to open an inspector's step stops
        /// at that step's action there (`openStep`).
        package var actionStarting: (@Sendable (Int) -> Void)?
        /// A replay that can go back (`moonflow replay --debug`): what answers its calls and
        /// reads from the recording, made anew for each of its hosts (each keeps how far the run
        /// got); takes the place of `serviceTap` and `readsFeed`.
        package var replayAnswers: (@Sendable () -> ReplayAnswers)?
        package init(path: String) { self.path = path }
    }

    let options: Options
    let input: InputSource
    /// Where printed lines go; nil: nowhere, and nothing is rendered (the inspector's `rerun`).
    let write: (@Sendable (String) -> Void)?
    let printer: EventPrinter
    var failed = false
    let lock = NSLock()
    var start = Date()

    /// - Parameters:
    ///   - input: the action lines (a file, standard input, or nothing).
    ///   - write: where lines go (standard output by default); nil: nowhere, rendering none.
    package init(options: Options, input: InputSource, write: (@Sendable (String) -> Void)? = FeatureRun.stdout) {
        self.options = options
        self.input = input
        self.write = write
        self.printer = EventPrinter(format: options.format, color: options.color, statePatches: options.statePatches)
        printer.width = TextWrap.width(of: STDOUT_FILENO)
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
    var _host: FeatureHost!
    var _feature: RunningFeature!
    let bindingLock = NSLock()
    /// Bumped when a stuck state is left behind: its events, if it ever comes back, are dropped.
    var generation = 0
    /// Input lines read so far (the line numbers in messages go on across a rebuild).
    var linesRead = 0
    /// The run's own listener on the feature, kept for as long as the run lives. (Dropped, it
    /// would go on listening, but the side table of its weak reference to the outlet, which the
    /// runtime points to only through the outlet's shifted refcount word, would look leaked to
    /// LeakSanitizer when a signal ends the process with the run still alive.)
    var observation: Disposable?
    var watcher: FileWatcher?
    /// Each file's stamp (time and size) as it was when a save last reloaded it; the watcher's thread alone uses it.
    var reloadedStamps: [String: String] = [:]

    var now: Int {
        if let test = host?.testScheduler { return test.now }  // no host yet: an error while making it
        return Int(Date().timeIntervalSince(start) * 1000)
    }

    /// The latest `at` of the timed lines read so far.
    var latestTimedLine = 0
    /// Calls made so far, by service (`drafts:put`), under `lock`: each `call` event's number.
    var callCounts: [String: Int] = [:]
    /// The declared invariants that do not hold now, under `lock`: each is reported when it
    /// breaks, not again at every state until it has held once more.
    var brokenInvariants: Set<String> = []
    /// Going back (`FeatureRun+Travel`): the input lines kept, and what a re-run prints.
    var travelState = TravelState()
    /// Every service and repository call's outcome so far, when the run can go back: a re-run
    /// is answered from it, and makes no call twice.
    let travelCalls = CallMemory()
    /// The gate of the current host's `replayAnswers`, told of each action the run handles
    /// (also those a re-run does not print again). Under `lock`.
    var replayGate: ReplayGate?
    /// The checker `checkInvariants` calls, loaded once per Lua state (by the state's identity).
    var invariantChecker: (state: ObjectIdentifier, function: LuaRef)?

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
            let version =
                (feature as? LuaFeature)?.definition.version ?? (feature as? LuaComposite)?.definition.version ?? 1
            let description = RunDescription(
                name: feature.name, version: version, path: options.path,
                actions: actionSchema, clock: options.clock, now: { [weak self] in self?.now ?? 0 })
            for observer in options.observers { observer.started(description, dispatch: Dispatcher(run: self)) }
        }
        observation = host.perform { feature.outlet.add { [weak self] event in self?.heard(event, generation: 0) } }
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

    /// Whether `generation` is still the run's (no stuck state was left behind since).
    func isCurrent(_ generation: Int) -> Bool { lock.withLock { self.generation == generation } }

    /// A host as the options ask for, its events (logs) tagged with `generation`.
    func makeHost(generation: Int) throws -> FeatureHost {
        var configuration = FeatureHost.Configuration(
            searchPaths: FeatureRun.searchPaths(for: options.path), profile: options.profile,
            timeLimitMs: options.timeLimitMs, memoryLimitMB: options.memoryLimitMB, clock: options.clock)
        configuration.repositoryFiles = options.repositoryStorage.map { SQLiteRepositoryFiles(storage: $0) }
        configuration.seed = options.seed
        let host = try FeatureHost(configuration: configuration)
        host.bridge.serviceTap = options.serviceTap
        var readsFeed = options.readsFeed
        if let fresh = options.replayAnswers {
            // A replay's host answers from the recording as from its start.
            let answers = fresh()
            host.bridge.serviceTap = answers.tap
            readsFeed = answers.reads
            lock.withLock { replayGate = answers.gate }
        } else if options.repeatable, options.serviceTap == nil {
            // A run that can go back answers a re-run's calls from those made before (FeatureRun+Travel).
            host.bridge.serviceTap = ServiceTap(remembering: travelCalls)
        }
        // Every service and repository call is an event, under what made it.
        host.bridge.callMade = { [weak self] service in self?.called(service, generation: generation) }
        try startInputs(of: host, generation: generation, feed: readsFeed)
        // The tool names files as they were given on its command line.
        host.bridge.locationRoots = []
        // A failed reload is reported by the watch itself, once the files have settled.
        host.reportsReloadFailures = false
        // os.exit is an error, print and io.write log events: the host owns the process and stdout.
        // Weak: a feature (and its Lua state) may outlive the run that made it.
        try HostOwnedProcess.install(in: host.lua, command: "run") { [weak self] text, location in
            self?.emit(.log(message: text, location: location), generation: generation)
        }
        options.prepareHost?(host, generation)
        return host
    }

    /// Time and random numbers as the run's inputs (`FeatureInputs`): under `--record` the seed
    /// (in the header, unless the virtual clock's default) and, on the real clock, every value of
    /// time read go to the recording; a replay hands the recorded values back.
    private func startInputs(of host: FeatureHost, generation: Int, feed: (@Sendable (String) -> LuaValue?)?) throws {
        let recorder = options.observers.lazy.compactMap { $0 as? SessionRecorder }.first
        let records = recorder != nil && (options.clock == .real || options.recordsReads)
        if let recorder, generation == 0, records || host.seed != FeatureInputs.defaultSeed {
            recorder.seed = host.seed
        }
        guard records || feed != nil else { return }
        var record: (@Sendable (String, LuaValue) -> Void)?
        if records, let recorder {
            record = { [weak recorder] kind, value in recorder?.read(kind, value) }
        }
        try host.startInputs(record: record, feed: feed)
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
}
