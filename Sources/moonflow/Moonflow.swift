import ArgumentParser
import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowSQLite
import MoonflowTesting
import MoonflowTool

@main
struct Entry {
    /// Usage errors exit 2, not ArgumentParser's 64.
    static func main() {
        unblockInheritedSignals()
        do {
            // exec reads lua5.4's command line itself (its -e, -l... are not ArgumentParser's).
            if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "exec" {
                try Exec.main(Array(CommandLine.arguments.dropFirst(2)))
                return
            }
            let arguments = Run.defaultingInspect(Array(CommandLine.arguments.dropFirst()))
            // A plain `moonflow run` skips ArgumentParser's reflection; anything else goes through it.
            if let run = RunRequest.quickParse(arguments) {
                try run.run()
                return
            }
            var command = try Moonflow.parseAsRoot(arguments)
            try command.run()
        } catch {
            let code = Moonflow.exitCode(for: error)
            if code == .validationFailure {
                FileHandle.standardError.write(Data((Moonflow.fullMessage(for: error) + "\n").utf8))
                exit(2)
            }
            Moonflow.exit(withError: error)
        }
    }
}

struct Moonflow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "moonflow",
        abstract: "Run, check and reload app features written in Lua on a Swift runtime.",
        discussion: """
            Shell completion: moonflow --generate-completion-script bash|zsh|fish prints a script \
            to source (see the README).
            """,
        version: FeatureHost.version,
        subcommands: [Run.self, Test.self, Check.self, New.self, Exec.self, Replay.self, Types.self, Serve.self]
    )
}

/// Limits shared by the commands that run scripts.
struct LimitOptions: ParsableArguments {
    /// What `run` and `check` use when no limit is given (`exec` has none).
    static let defaultTimeLimitMs: Int64 = 1000
    static let defaultMemoryLimitMB = 512

    // `.unconditional`: `--time-limit -1` is a bad value (named below), not a missing one.
    @Option(name: .long, parsing: .unconditional,
            help: ArgumentHelp("Stop any one Lua call after MS milliseconds (default: \(defaultTimeLimitMs) for run and check, none for exec).", valueName: "MS"))
    var timeLimit: Int64?

    @Option(name: .long, parsing: .unconditional,
            help: ArgumentHelp("Cap the Lua state's memory at MB megabytes (default: \(defaultMemoryLimitMB) for run and check, none for exec).", valueName: "MB"))
    var memoryLimit: Int?

    @Flag(name: .long, help: "Run with the sandboxed profile (no io, os.execute, debug, binary chunks).")
    var sandbox = false

    /// One day: longer limits would overflow the deadline's clock arithmetic, and no call should need them.
    static let maxTimeLimitMs: Int64 = 86_400_000
    /// One terabyte: megabytes are shifted into bytes, and a larger count wrapped (2^44 MB
    /// became no limit at all, larger ones a negative budget).
    static let maxMemoryLimitMB = 1 << 20

    func validate() throws { try LimitOptions.check(timeLimit: timeLimit, memoryLimit: memoryLimit) }

    /// The limits' own checks, for ArgumentParser and for `moonflow run`'s quick parse.
    static func check(timeLimit: Int64?, memoryLimit: Int?) throws {
        if let t = timeLimit, t <= 0 { throw ValidationError("--time-limit must be a positive number of milliseconds") }
        if let t = timeLimit, t > LimitOptions.maxTimeLimitMs {
            throw ValidationError("--time-limit must be at most \(LimitOptions.maxTimeLimitMs) ms (one day)")
        }
        if let m = memoryLimit, m < 1 || m > LimitOptions.maxMemoryLimitMB {
            throw ValidationError("--memory-limit must be a number of megabytes from 1 to \(LimitOptions.maxMemoryLimitMB) (got \(m))")
        }
    }
}

extension OutputFormat: ExpressibleByArgument {}

/// `--state`: how jsonl prints the state after each mutation.
enum StateOutput: String, ExpressibleByArgument, CaseIterable { case full, patch }
extension FeatureHost.Clock: ExpressibleByArgument {}

/// `--color auto|always|never`.
enum ColorMode: String, ExpressibleByArgument, CaseIterable {
    case auto, always, never

    /// Whether to paint: `auto` paints on a terminal unless `NO_COLOR` is set (and not empty).
    /// (One `getenv`, not `ProcessInfo`'s whole environment: this runs on every start.)
    func enabled(isTerminal: Bool) -> Bool {
        switch self {
        case .always: true
        case .never: false
        case .auto: isTerminal && (getenv("NO_COLOR").map { $0.pointee == 0 } ?? true)
        }
    }
}

/// PATH of `run` and `check`: a plugin folder with `init.lua`, a `.lua` file, or a plugin name in ./plugins.
/// - Throws: `ValidationError` (exit 2) naming what is missing.
func validatePluginPath(_ path: String) throws {
    let fm = FileManager.default
    var isFolder: ObjCBool = false
    if fm.fileExists(atPath: path, isDirectory: &isFolder) {
        if isFolder.boolValue && !fm.fileExists(atPath: (path as NSString).appendingPathComponent("init.lua")) {
            throw ValidationError("\(path) is a folder without init.lua; a plugin folder needs an init.lua that returns mf.feature{...}")
        }
        return
    }
    let isPluginName = !path.contains("/") && !path.hasSuffix(".lua")
    if isPluginName && fm.fileExists(atPath: "plugins/\(path)/init.lua") { return }
    throw ValidationError("\(path) does not exist; give a plugin folder (with init.lua), a .lua file, or the name of a plugin in ./plugins")
}

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a feature: send it actions and watch its state change.",
        discussion: """
            PATH is a plugin folder (with init.lua) or a .lua file returning a definition. \
            Input is JSON Lines: an action per line ({"type":"query","text":"a"}), or \
            {"at": 250, "send": {...}} to send at 250 ms on the run's clock. Without \
            --actions on a terminal, a prompt takes JSON or the shorthand `query text=hello`.

            With --watch, every save of the plugin's Lua files reloads it with the state \
            kept, and the run goes on until Ctrl-C, SIGINT or SIGTERM.

            --inspect [HOST:PORT] serves a live inspector (default 127.0.0.1:0, any free \
            port on loopback) and prints its URL with a token; the address may be left out.

            Exit status: 0 all good, 1 a script error or a bad input line, 2 usage error.
            """
    )

    @Argument(help: "A plugin folder or a .lua file.")
    var path: String

    @Option(name: .long, help: ArgumentHelp("Read actions from FILE, or - for standard input.", valueName: "FILE|-"))
    var actions: String?

    @Option(name: .long, help: "pretty (for people) or jsonl (one JSON object per event).")
    var format: OutputFormat = .pretty

    @Option(name: .long, help: "real, or virtual: timers fire at once, deterministically.")
    var clock: FeatureHost.Clock = .real

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Stop when the run's clock reaches MS.", valueName: "MS"))
    var until: Int?

    @Flag(name: .long, help: "Reload the plugin on every save, keeping the state; run until Ctrl-C (real clock).")
    var watch = false

    @Option(name: .long, help: "jsonl state events: full (the whole state each time) or patch (a JSON Patch against the previous state).")
    var state: StateOutput = .full

    @Option(name: .long, help: ArgumentHelp("Keep the SQLite files plugins declare in DIR (made when missing), or :memory: for none.", valueName: "DIR"))
    var db: String?

    @Option(name: .long, help: "Colour pretty output: auto (on a terminal, unless NO_COLOR is set), always or never.")
    var color: ColorMode = .auto

    // Shown in the discussion instead: the help's option list can only show a required value.
    @Option(name: .long, help: ArgumentHelp("Serve a live inspector at HOST:PORT (default 127.0.0.1:0); the value may be left out.", valueName: "HOST:PORT", visibility: .hidden))
    var inspect: String?

    @Option(name: .long, help: ArgumentHelp("With --inspect: keep the last N frames for pages that connect late, and for jump (default 10000).", valueName: "N"))
    var inspectFrames: Int?

    @Option(name: .long, help: ArgumentHelp("With --inspect: keep at most MB megabytes of frames, whole states and actions, and queue at most that much for a page that does not read (default 64).", valueName: "MB"))
    var inspectMemory: Int?

    @Option(name: .long, help: ArgumentHelp("Write the session (inputs with their times, events) to FILE as JSON Lines, for moonflow replay.", valueName: "FILE"))
    var record: String?

    @OptionGroup var limits: LimitOptions

    /// `--inspect` may stand without its value: then it gets the default address.
    static func defaultingInspect(_ arguments: [String]) -> [String] {
        var out: [String] = []
        for (i, a) in arguments.enumerated() {
            out.append(a)
            guard a == "--inspect" else { continue }
            let next = i + 1 < arguments.count ? arguments[i + 1] : nil
            let isAddress = next.map { $0.range(of: #"^(\[[0-9A-Fa-f:.]+\]|[^/\s:]*)?:?[0-9]+$"#, options: .regularExpression) != nil } ?? false
            if !isAddress { out.append("127.0.0.1:0") }
        }
        return out
    }

    /// What was asked, for `RunRequest`'s checks and run (shared with the quick parse).
    var request: RunRequest {
        RunRequest(path: path, actions: actions, format: format, clock: clock, until: until, watch: watch,
                   state: state, db: db, color: color, inspect: inspect, inspectFrames: inspectFrames,
                   inspectMemory: inspectMemory, record: record, timeLimit: limits.timeLimit,
                   memoryLimit: limits.memoryLimit, sandbox: limits.sandbox)
    }

    // `limits` validates itself (an option group).
    func validate() throws { try request.validate() }

    func run() throws { try request.run() }
}

struct Replay: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Re-run a recorded session (moonflow run --record FILE) and compare every event.",
        discussion: """
            The inputs are sent at their recorded times on the virtual clock. \
            The first event that differs from the recording (a state, action, \
            mutation, effect, error or log; numbers by value and type) is \
            printed as a diff (- recorded, + now). The recorded plugin path is \
            resolved inside --plugins DIR (default: the recording's folder) and \
            runs sandboxed unless --trusted is given. Exit status: 0 identical, \
            1 an event differs or a recorded action or mutation no longer \
            validates, 2 the recording cannot be read.
            """
    )

    @Argument(help: "A recording made with moonflow run PATH --record FILE.")
    var file: String

    @Flag(name: .long, help: "Rewrite FILE from the run as the code behaves now.")
    var update = false

    @Option(name: .long, help: ArgumentHelp("The folder the recording's plugin path is resolved in (default: the recording's own folder).", valueName: "DIR"))
    var plugins: String?

    @Flag(name: .long, help: "Run the plugin with the trusted profile (io, os, debug) instead of the sandbox.")
    var trusted = false

    @OptionGroup var limits: LimitOptions

    func validate() throws {
        if trusted && limits.sandbox { throw ValidationError("--trusted and --sandbox contradict each other; a replay is sandboxed unless --trusted is given") }
    }

    func run() throws {
        var replay = SessionReplay(file: file)
        replay.update = update
        replay.timeLimitMs = limits.timeLimit ?? LimitOptions.defaultTimeLimitMs
        replay.memoryLimitMB = limits.memoryLimit ?? LimitOptions.defaultMemoryLimitMB
        replay.profile = trusted ? .trusted : .sandboxed
        replay.pluginsFolder = plugins
        let status = replay.run()
        if status != 0 { throw ExitCode(status) }
    }
}

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Load and validate a plugin without running it, and lint its files (exit 0 when it is fine, 1 otherwise).",
        discussion: """
            Problems (syntax, the definition, its interactors) fail the check. luacheck's warnings \
            (undefined globals, unused variables and arguments, shadowing, unreachable code) are \
            printed as file:line:col: warning: ... and fail it only under --strict.
            """
    )

    @Argument(help: "A plugin folder or a .lua file.")
    var path: String

    @Flag(name: .long, help: "Fail on luacheck's warnings too (and when luacheck is not installed).")
    var strict = false

    @OptionGroup var limits: LimitOptions

    func validate() throws { try validatePluginPath(path) }

    func run() throws {
        var check = PluginCheck(path: path)
        check.profile = limits.sandbox ? .sandboxed : .trusted
        check.timeLimitMs = limits.timeLimit ?? LimitOptions.defaultTimeLimitMs
        check.memoryLimitMB = limits.memoryLimit ?? LimitOptions.defaultMemoryLimitMB
        let report = check.report()
        let stderr = { (line: String) in FileHandle.standardError.write(Data("\(line)\n".utf8)) }
        (report.problems + report.warnings).forEach(stderr)
        if let note = report.lintNote { stderr("moonflow check: \(note)") }
        let warnings = report.warnings.count == 1 ? "1 warning" : "\(report.warnings.count) warnings"
        if report.fails(strict: strict) {
            if report.problems.isEmpty {
                stderr("\(path): failed under --strict: " + (report.warnings.isEmpty ? "luacheck did not run" : warnings))
            }
            throw ExitCode(1)
        }
        print("\(path): ok" + (report.warnings.isEmpty ? "" : " (\(warnings))"))
    }
}

struct Exec: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exec",
        abstract: "Run Lua as lua5.4 does, with `moonflow` preloaded.",
        usage: "moonflow exec [--time-limit MS] [--memory-limit MB] [--sandbox] [options] [script [args]]",
        discussion: """
            Takes lua5.4's command line and behaves as lua5.4: -e stat, -l mod, -l g=mod, -i, -v, \
            -E, -W, -- and - as `man lua5.4` says; the script's arguments are `arg` and `...`, \
            the words before it at arg[-1], arg[-2]...; with no script, standard input (a \
            terminal: the interactive loop); LUA_INIT_5_4 or LUA_INIT runs first. moonflow's \
            own options come first, before any of lua5.4's. No time or memory limit unless given.
            """
    )

    @OptionGroup var limits: LimitOptions

    @Argument(parsing: .captureForPassthrough, help: "lua5.4's options, the Lua file to run (- for standard input) and its arguments.")
    var arguments: [String] = []

    /// `moonflow exec WORDS`: moonflow's own options first (checked, and `--help`, by
    /// ArgumentParser), then lua5.4's command line, read by lua5.4's rules.
    static func main(_ words: [String]) throws {
        var own = 0
        while own < words.count {
            let word = words[own]
            if word == "--time-limit" || word == "--memory-limit" {
                own = min(own + 2, words.count)
            } else if ["--sandbox", "--help", "-h"].contains(word) || word.hasPrefix("--time-limit=") || word.hasPrefix("--memory-limit=") {
                own += 1
            } else {
                break
            }
        }
        // (The captured arguments would swallow --help: it is asked here.)
        if words[..<own].contains(where: { $0 == "--help" || $0 == "-h" }) { throw CleanExit.helpRequest(Exec.self) }
        let command = try Moonflow.parseAsRoot(["exec"] + words[..<own])
        guard let exec = command as? Exec else {
            var other = command
            try other.run()
            return
        }
        try exec.runLua(words, optionsFrom: own)
    }

    func run() throws {
        try runLua(arguments, optionsFrom: 0)
    }

    /// Runs `words` (moonflow's options, the first `optionsFrom`, then lua5.4's).
    private func runLua(_ words: [String], optionsFrom own: Int) throws {
        let interpreter = Exec.interpreter
        var runner = ScriptRunner(StandaloneCommandLine(interpreter + words, optionsFrom: interpreter.count + own))
        runner.timeLimitMs = limits.timeLimit
        runner.memoryLimitMB = limits.memoryLimit
        runner.profile = limits.sandbox ? .sandboxed : .trusted
        let status = runner.run()
        if status != 0 { throw ExitCode(status) }
    }

    /// What `arg`'s lowest index holds, where lua5.4 keeps its own path: a command that
    /// starts `moonflow exec` again. `moonflow-lua` beside this binary, one word that
    /// scripts can run or quote; without it, this binary's path and `exec`.
    static var interpreter: [String] {
        let proc = URL(fileURLWithPath: "/proc/self/exe")
        let own = FileManager.default.fileExists(atPath: proc.path) ? proc.resolvingSymlinksInPath()
            : (Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])).resolvingSymlinksInPath()
        let wrapper = own.deletingLastPathComponent().appendingPathComponent("moonflow-lua")
        if FileManager.default.isExecutableFile(atPath: wrapper.path) { return [wrapper.path] }
        return [own.path, "exec"]
    }
}

struct Test: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Run Lua specs (busted, with require \"moonflow.test\") and report every failure.",
        discussion: """
            PATHs are spec files or folders searched for *_spec.lua; with none, every \
            plugins/*/spec/*_spec.lua under the current folder. Each file runs in a fresh \
            Lua state; a line per test as it ends. Ends with `N passed, N failed` \
            (under --tap, as a closing `#` comment); exit 0 only when nothing failed.

            --time-limit bounds each handler and reducer call (default 1000 ms); each test \
            as a whole, its waits for services included, gets ten times that (10 s).
            """
    )

    @Argument(help: "Spec files or folders (default: plugins/*/spec).")
    var paths: [String] = []

    @Option(name: .long, help: ArgumentHelp("Run only tests whose full name (describe names and it name) contains TEXT.", valueName: "TEXT"))
    var filter: String?

    @Option(name: .long, help: ArgumentHelp("Also write a JUnit XML report to FILE.", valueName: "FILE"))
    var junit: String?

    @Flag(name: .long, help: "Print TAP version 13 instead of the summary.")
    var tap = false

    @Option(name: .long, help: ArgumentHelp("Run N spec files at once, each in its own Lua state; output stays in file order (default: one per core).", valueName: "N"))
    var jobs: Int?

    @Option(name: .long, help: ArgumentHelp("Run only shard I of N: a stable subset of the files, for splitting a suite across CI machines.", valueName: "I/N"))
    var shard: String?

    @OptionGroup var limits: LimitOptions

    func validate() throws {
        if let jobs, jobs < 1 { throw ValidationError("--jobs \(jobs): give 1 or more files at once") }
        if let shard { _ = try parsedShard(shard) }
    }

    private func parsedShard(_ text: String) throws -> SpecRunner.Shard {
        do { return try SpecRunner.Shard(parsing: text) } catch { throw ValidationError("\(error)") }
    }

    func run() throws {
        var options = SpecRunner.Options(paths: paths)
        options.filter = filter
        options.junitPath = junit
        options.tap = tap
        options.jobs = jobs
        options.shard = try shard.map(parsedShard)
        options.timeLimitMs = limits.timeLimit ?? LimitOptions.defaultTimeLimitMs
        // At most ten days: validated limits are at most one day, and the watchdog caps it at one.
        options.testTimeLimitMs = (limits.timeLimit ?? LimitOptions.defaultTimeLimitMs) * 10
        options.memoryLimitMB = limits.memoryLimit ?? 512
        options.profile = limits.sandbox ? .sandboxed : .trusted
        let status = SpecRunner(options: options).run()
        if status != 0 { throw ExitCode(status) }
    }
}

struct New: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "new",
        abstract: "Scaffold plugins/NAME with a feature (one action, one mutation, a timer) and a passing spec.",
        discussion: "Refuses to overwrite anything that exists."
    )

    @Argument(help: "The plugin's name: a letter, then letters, digits or underscores.")
    var name: String

    @Option(name: .long, help: ArgumentHelp("Where plugin folders live.", valueName: "DIR"))
    var plugins = "plugins"

    func run() throws {
        do {
            let made = try PluginScaffold(name: name, pluginsFolder: plugins).write()
            print("created \(made.joined(separator: "\n        "))")
            print("""

                next:
                  moonflow test \(plugins)/\(name)/spec          # the spec passes
                  moonflow run \(plugins)/\(name)                # try it at the prompt: tick, then tick ms=500
                """)
        } catch let e as PluginScaffold.Refusal {
            FileHandle.standardError.write(Data("moonflow new: \(e.message)\n".utf8))
            throw ExitCode(e.isUsage ? 2 : 1)
        }
    }
}

struct Types: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "types",
        abstract: "Print a plugin's declared types: its state declaration in Lua, Swift types, or LuaLS annotations.",
        discussion: """
            The feature's declarations (state, actions, mutations, outputs) are the one source: \
            --lua prints the `state = { ... }` declaration to paste into the feature (the one \
            inferred from `initial` when it declares none); --swift a Swift file with a Codable \
            <Name>State, an <Name>Action enum for send(case:), and <Name>Mutation and <Name>Effect \
            enums that decode by `type`; --luals a ---@meta file of LuaLS classes for the state, \
            actions, mutations and outputs. For an mf.compose, its children's types come too. \
            --luals --api (no PATH) prints the annotations of the moonflow and moonflow.test \
            modules. Only the plugin's top level runs: handle and reduce are not called.

            Examples:
              moonflow types --lua plugins/counter
              moonflow types --swift plugins/counter -o Sources/App/Counter.swift
              moonflow types --luals plugins/counter -o types/luals/counter.lua
              moonflow types --luals --api -o types/luals/moonflow.lua
            """
    )

    @Flag(name: .long, help: "Print the state declaration as Lua source to paste into the feature.")
    var lua = false

    @Flag(name: .long, help: "Print Swift types for the state, actions, mutations and outputs.")
    var swift = false

    @Flag(name: .long, help: "Print LuaLS (lua-language-server) annotations.")
    var luals = false

    @Flag(name: .long, help: "With --luals and no PATH: the annotations of the moonflow module itself.")
    var api = false

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to FILE instead of standard output.", valueName: "FILE"))
    var output: String?

    @Argument(help: "A plugin folder or a .lua file.")
    var path: String?

    private var mode: String { lua ? "--lua" : swift ? "--swift" : "--luals" }

    func validate() throws {
        let modes = [lua, swift, luals].filter { $0 }.count
        if modes == 0 {
            throw ValidationError("""
                moonflow types needs what to print: --lua (the state declaration), --swift (Swift types) \
                or --luals (LuaLS annotations), e.g. moonflow types --swift \(path ?? "plugins/counter")
                """)
        }
        if modes > 1 { throw ValidationError("give one of --lua, --swift and --luals; run moonflow types once for each") }
        if api {
            guard luals else { throw ValidationError("--api goes with --luals: moonflow types --luals --api") }
            if let path { throw ValidationError("--api prints the moonflow module's annotations, not a plugin's; drop \(path), or drop --api") }
            return
        }
        guard let path else {
            throw ValidationError("moonflow types \(mode) needs a plugin: moonflow types \(mode) plugins/counter"
                                  + (luals ? " (or --api for the moonflow module's own annotations)" : ""))
        }
        try validatePluginPath(path)
        if let output {
            let folder = PathText.parent(of: output)
            var isFolder: ObjCBool = false
            if !folder.isEmpty && !(FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder) && isFolder.boolValue) {
                throw ValidationError("-o \(output): the folder \(folder) does not exist; make it first (mkdir -p \(folder))")
            }
        }
    }

    func run() throws {
        let text: String
        if api {
            text = LuaLSAnnotations.api
        } else {
            let path = path!
            let features: [FeatureDeclarations]
            do { features = try FeatureDeclarations.load(path) } catch {
                FileHandle.standardError.write(Data("\(error)\n".utf8))
                throw ExitCode(1)
            }
            let command = "moonflow types \(mode) \(path)"
            if lua { text = LuaStateDeclaration(features: features).source() }
            else if swift { text = SwiftTypesGenerator(features: features, command: command).source() }
            else { text = LuaLSAnnotations(features: features, command: command).source() }
        }
        if let output {
            do { try text.write(toFile: output, atomically: true, encoding: .utf8) } catch {
                FileHandle.standardError.write(Data("moonflow types: cannot write \(output): \(error.localizedDescription)\n".utf8))
                throw ExitCode(1)
            }
        } else {
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    }
}
