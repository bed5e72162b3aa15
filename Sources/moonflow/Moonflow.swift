import ArgumentParser
import Foundation
import LuaKit
import MoonflowHost

@main
struct Entry {
    /// Usage errors exit 2 (DESIGN §5), not ArgumentParser's 64.
    static func main() {
        do {
            var command = try Moonflow.parseAsRoot()
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
            Shell completion: moonflow --generate-completion-script bash|zsh|fish prints a script
            to source (see the README).
            """,
        version: FeatureHost.version,
        subcommands: [Run.self, Check.self, Exec.self]
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

    func validate() throws {
        if let t = timeLimit, t <= 0 { throw ValidationError("--time-limit must be a positive number of milliseconds") }
        if let m = memoryLimit, m <= 0 { throw ValidationError("--memory-limit must be a positive number of megabytes") }
    }
}

extension OutputFormat: ExpressibleByArgument {}
extension FeatureHost.Clock: ExpressibleByArgument {}

/// `--color auto|always|never`.
enum ColorMode: String, ExpressibleByArgument, CaseIterable {
    case auto, always, never

    /// Whether to paint: `auto` paints on a terminal unless `NO_COLOR` is set (and not empty).
    func enabled(isTerminal: Bool, environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        switch self {
        case .always: true
        case .never: false
        case .auto: isTerminal && (environment["NO_COLOR"] ?? "").isEmpty
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
        abstract: "Run a feature: send it actions and watch its state change.",
        discussion: """
            PATH is a plugin folder (with init.lua) or a .lua file returning a definition.
            Input is JSON Lines: an action per line ({"type":"query","text":"a"}), or
            {"at": 250, "send": {...}} to send at 250 ms on the run's clock. Without
            --actions on a terminal, a prompt takes JSON or the shorthand `query text=hello`.
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

    @Option(name: .long, help: "Colour pretty output: auto (on a terminal, unless NO_COLOR is set), always or never.")
    var color: ColorMode = .auto

    @OptionGroup var limits: LimitOptions

    func validate() throws {
        if let until, until < 0 { throw ValidationError("--until must be a number of milliseconds, 0 or more (got \(until))") }
        try validatePluginPath(path)
        if let actions, actions != "-" { _ = try actionsFile(actions) }
    }

    /// The `--actions` file's lines; a missing or unreadable file is a usage error.
    private func actionsFile(_ file: String) throws -> InputLines {
        do { return try InputLines(file: file) } catch { throw ValidationError("\(error)") }
    }

    func run() throws {
        var options = FeatureRun.Options(path: path)
        options.format = format
        options.clock = clock
        options.untilMs = until
        options.timeLimitMs = limits.timeLimit ?? LimitOptions.defaultTimeLimitMs
        options.memoryLimitMB = limits.memoryLimit ?? LimitOptions.defaultMemoryLimitMB
        options.profile = limits.sandbox ? .sandboxed : .trusted
        options.color = format == .pretty && color.enabled(isTerminal: isatty(STDOUT_FILENO) != 0)
        let input: InputLines
        var prompt: EditLinePrompt?
        defer { prompt?.close() }
        switch actions {
        case nil:
            // A person at a terminal gets the prompt; anything piped in is read as JSON Lines.
            if isatty(STDIN_FILENO) != 0 {
                prompt = EditLinePrompt()
                input = InputLines(prompt: prompt!)
            } else {
                input = InputLines(standardInput: false)
            }
        case "-":
            input = InputLines(standardInput: false)
        case let file?:
            input = try actionsFile(file)
        }
        let status = FeatureRun(options: options, input: input).run()
        if status != 0 { throw ExitCode(status) }
    }
}

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load and validate a plugin without running it (exit 0 when it is fine, 1 otherwise)."
    )

    @Argument(help: "A plugin folder or a .lua file.")
    var path: String

    @OptionGroup var limits: LimitOptions

    func validate() throws { try validatePluginPath(path) }

    func run() throws {
        var check = PluginCheck(path: path)
        check.profile = limits.sandbox ? .sandboxed : .trusted
        check.timeLimitMs = limits.timeLimit ?? LimitOptions.defaultTimeLimitMs
        check.memoryLimitMB = limits.memoryLimit ?? LimitOptions.defaultMemoryLimitMB
        let problems = check.problems()
        if problems.isEmpty {
            print("\(path): ok")
            return
        }
        for p in problems { FileHandle.standardError.write(Data("\(p)\n".utf8)) }
        throw ExitCode(1)
    }
}

struct Exec: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a Lua file like lua5.4 FILE, with `moonflow` preloaded.",
        discussion: "FILE - reads the script from standard input. Arguments after FILE go to the script (`arg` and `...`). No time or memory limit unless given."
    )

    @OptionGroup var limits: LimitOptions

    @Argument(help: "The Lua file to run, or - for standard input.")
    var file: String

    @Argument(parsing: .captureForPassthrough, help: "Arguments for the script.")
    var arguments: [String] = []

    func run() throws {
        var runner = ScriptRunner(file: file, arguments: arguments)
        runner.timeLimitMs = limits.timeLimit
        runner.memoryLimitMB = limits.memoryLimit
        runner.profile = limits.sandbox ? .sandboxed : .trusted
        let status = runner.run()
        if status != 0 { throw ExitCode(status) }
    }
}
