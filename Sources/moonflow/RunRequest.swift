import ArgumentParser
import Foundation
import MoonflowDebug
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
import MoonflowRun
import MoonflowSQLite
import MoonflowTool

/// What `moonflow run` was asked: plain values, made by ArgumentParser's `Run` or by
/// `quickParse` (QuickRun.swift), which skips ArgumentParser. Holds the checks of the values
/// together (`validate`) and the run itself, so both ways in behave the same.
struct RunRequest {
    var path: String
    var actions: String? = nil
    var format: OutputFormat = .pretty
    var clock: FeatureHost.Clock = .real
    var until: Int? = nil
    var watch = false
    var state: StateOutput = .full
    var db: String? = nil
    var color: ColorMode = .auto
    var inspect: String? = nil
    var inspectFrames: Int? = nil
    var inspectMemory: Int? = nil
    var record: String? = nil
    var timeLimit: Int64? = nil
    var memoryLimit: Int? = nil
    var sandbox = false
    var debug: String? = nil
    var debugWait = false
    var debugHistory: Int? = nil
    var seed: Int64? = nil

    func validate() throws {
        if let record {
            let folder = PathText.parent(of: record)
            if !FileManager.default.isWritableFile(atPath: folder) {
                throw ValidationError(
                    "--record \(record): the folder \(folder) does not exist or is not writable; give a file in a folder you can write to"
                )
            }
        }
        if let inspect {
            do { _ = try InspectorPipe.address(inspect) } catch { throw ValidationError("--inspect \(error)") }
            if clock == .virtual {
                throw ValidationError(
                    "--inspect runs on the real clock (the page sends actions as they come); drop --clock virtual")
            }
        } else if inspectFrames != nil || inspectMemory != nil {
            throw ValidationError("--inspect-frames and --inspect-memory size the inspector's window; add --inspect")
        }
        if let inspectFrames, inspectFrames < 1 || inspectFrames > 100_000_000 {
            throw ValidationError(
                "--inspect-frames must be a number of frames from 1 to 100000000 (got \(inspectFrames))")
        }
        if let inspectMemory, inspectMemory < 1 || inspectMemory > 1 << 20 {
            throw ValidationError(
                "--inspect-memory must be a number of megabytes from 1 to 1048576 (got \(inspectMemory))")
        }
        try validateDebugOptions(debug, wait: debugWait)
        if let debugHistory {
            guard debug != nil else {
                throw ValidationError(
                    "--debug-history sizes what a debugged run keeps to go back; add --debug [HOST:]PORT")
            }
            guard (1...100_000_000).contains(debugHistory) else {
                throw ValidationError(
                    "--debug-history must be a number of inputs from 1 to 100000000 (got \(debugHistory))")
            }
        }
        if let until, until < 0 {
            throw ValidationError("--until must be a number of milliseconds, 0 or more (got \(until))")
        }
        if watch && clock == .virtual { throw ValidationError("--watch runs on the real clock; drop --clock virtual") }
        var isFolder: ObjCBool = false
        if let db, db != ":memory:",
            db.isEmpty || (FileManager.default.fileExists(atPath: db, isDirectory: &isFolder) && !isFolder.boolValue)
        {
            throw ValidationError(
                "--db \(db) is not a folder; give a folder for the SQLite files (it is made when missing), or :memory:")
        }
        try validatePluginPath(path)
        if let actions, actions != "-" { _ = try actionsFile(actions) }
    }

    /// The `--actions` file's lines; a missing or unreadable file is a usage error.
    private func actionsFile(_ file: String) throws -> InputSource {
        do { return try InputSource(file: file) } catch { throw ValidationError("\(error)") }
    }

    func run() throws {
        var options = FeatureRun.Options(path: path)
        options.format = format
        options.clock = clock
        options.seed = seed
        options.untilMs = until
        options.timeLimitMs = timeLimit ?? LimitOptions.defaultTimeLimitMs
        options.memoryLimitMB = memoryLimit ?? LimitOptions.defaultMemoryLimitMB
        options.profile = sandbox ? .sandboxed : .trusted
        options.repositoryStorage = db.map(RepositoryStorage.init(argument:)) ?? .asDeclared
        options.color = format == .pretty && color.enabled(isTerminal: isatty(STDOUT_FILENO) != 0)
        options.watch = watch
        options.statePatches = state == .patch
        let input: InputSource
        var prompt: EditLinePrompt?
        defer { prompt?.close() }
        switch actions {
        case nil:
            // A person at a terminal gets the prompt; anything piped in is read as JSON Lines.
            if isatty(STDIN_FILENO) != 0 {
                prompt = EditLinePrompt()
                input = InputSource(prompt: prompt!)
            } else {
                input = InputSource(standardInput: false)
            }
        case "-":
            input = InputSource(standardInput: false)
        case let file?:
            input = try actionsFile(file)
        }
        if let record {
            do {
                let recorder = try SessionRecorder(path: record)
                options.observers.append(recorder)
                options.serviceTap = recorder.serviceTap
            } catch { throw ValidationError("--record: \(error)") }
        }
        // Before the inspector's threads start and its URL is printed: Ctrl-C right after is kept.
        if watch || inspect != nil { FeatureRun.holdStopSignals() }
        if let inspect {
            let (host, _) = try InspectorPipe.address(inspect)
            // The server runs in moonflow-inspector beside this binary: moonflow links no web server.
            let inspector: InspectorProcess
            do {
                inspector = try InspectorProcess.start(
                    address: inspect, frames: inspectFrames ?? 10_000, bytes: (inspectMemory ?? 64) << 20)
            } catch {
                FileHandle.standardError.write(Data("moonflow: --inspect \(error)\n".utf8))
                throw ExitCode(1)
            }
            let url = inspector.url
            if !["127.0.0.1", "localhost", "::1"].contains(host.lowercased()) {
                FileHandle.standardError.write(
                    Data(
                        "moonflow: warning: --inspect \(inspect) is reachable from the network: anyone who can reach this machine and learns the URL's token can read the run and send it actions; the page answers only to \(inspector.authorities.joined(separator: ", ")) (use 127.0.0.1 unless you mean it)\n"
                            .utf8))
            }
            options.observers.append(inspector)
            // Each service answer goes to the inspector too, so its `rerun` answers every call as
            // this run's was answered, at the same point.
            options.handAnswers(to: inspector)
            options.keepsRunning = true
            let line =
                format == .jsonl
                ? EventLine.inspector(url: url)
                : "     0 ms  inspector \(url)"
            FeatureRun.stdout(line)
        }
        var debugger: DebugHandle?
        if let debug {
            let server = try DebugServer.start(debug, name: PathText.normalized(path), wait: debugWait)
            options.prepareHost = { host, _ in server.prepare(host) }
            options.reloaded = { server.server.controller.filesChanged() }
            // On the virtual clock the run can be repeated from its load: the debugger can go back.
            options.repeatable = options.clock == .virtual && options.serviceTap == nil && !watch
            if options.repeatable {
                let history = debugHistory ?? FeatureRun.defaultTravelHistory
                options.travelHistory = history
                options.historyDropped = { read in
                    server.server.controller.stopsRepeating(
                        because:
                            "cannot go back any more: the run keeps at most \(history) inputs (input lines and service or repository calls) to go back, and let them all go at input line \(read), since a re-run starts from the load and needs every one; run it again with a larger --debug-history, or record it (--record FILE) and debug its replay (moonflow replay FILE --debug PORT), which reads them from the file"
                    )
                }
            }
            // The inspector's "open in the debugger": a past step, in a copy run again to it.
            if inspect != nil {
                options.openInDebugger = server.server.opensSteps(of: options.path, seed: options.seed)
            }
            debugger = server
        }
        // At the prompt, what the run prints goes above the line being typed.
        var write = FeatureRun.stdout
        if prompt != nil { write = EditLinePrompt.printAbove }
        let run = FeatureRun(options: options, input: input, write: write)
        if let debugger, options.repeatable {
            debugger.server.controller.repeats(
                by: { [weak run] in run?.travel() }, loading: LoadedSources(for: [options.path]))
        } else if let debugger, options.clock == .virtual {
            debugger.server.controller.cannotRepeat(
                because: "cannot go back in a run with --watch or --record; run without them to go back")
        }
        let status = run.run()
        if status != 0 { throw ExitCode(status) }
    }
}
