import ArgumentParser
import Foundation
import LuaKit
import MoonflowHost
import MoonflowTesting

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
        subcommands: [Run.self, Test.self, Check.self, New.self, Exec.self]
    )
}

/// Limits shared by the commands that run scripts.
struct LimitOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Stop any one Lua call after MS milliseconds.", valueName: "MS"))
    var timeLimit: Int64?

    @Option(name: .long, help: ArgumentHelp("Cap the Lua state's memory at MB megabytes.", valueName: "MB"))
    var memoryLimit: Int?

    @Flag(name: .long, help: "Run with the sandboxed profile (no io, os.execute, debug, binary chunks).")
    var sandbox = false

    /// One day: longer limits would overflow the deadline's clock arithmetic, and no call should need them.
    static let maxTimeLimitMs: Int64 = 86_400_000

    func validate() throws {
        if let t = timeLimit, t <= 0 { throw ValidationError("--time-limit must be a positive number of milliseconds") }
        if let t = timeLimit, t > LimitOptions.maxTimeLimitMs {
            throw ValidationError("--time-limit must be at most \(LimitOptions.maxTimeLimitMs) ms (one day)")
        }
        if let m = memoryLimit, m <= 0 { throw ValidationError("--memory-limit must be a positive number of megabytes") }
    }
}

extension OutputFormat: ExpressibleByArgument {}
extension FeatureHost.Clock: ExpressibleByArgument {}

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a feature: send it actions and watch its state change.",
        discussion: """
            PATH is a plugin folder (with init.lua) or a .lua file returning a definition.
            Input is JSON Lines: an action per line ({"type":"query","text":"a"}), or
            {"at": 250, "send": {...}} to send at 250 ms on the run's clock. Without
            --actions on a terminal, a prompt takes JSON or the shorthand `query text=hello`.
            With --watch, every save of the plugin's Lua files reloads it with the state
            kept, and the run goes on until Ctrl-C, SIGINT or SIGTERM.
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

    @Option(name: .long, help: ArgumentHelp("Stop when the run's clock reaches MS.", valueName: "MS"))
    var until: Int?

    @Flag(name: .long, help: "Reload the plugin on every save, keeping the state; run until Ctrl-C (real clock).")
    var watch = false

    @OptionGroup var limits: LimitOptions

    func validate() throws {
        if let until, until < 0 { throw ValidationError("--until must be a number of milliseconds, 0 or more") }
        if watch && clock == .virtual { throw ValidationError("--watch runs on the real clock; drop --clock virtual") }
        let isPluginName = !path.contains("/") && !path.hasSuffix(".lua")
        guard FileManager.default.fileExists(atPath: path) || (isPluginName && FileManager.default.fileExists(atPath: "plugins/\(path)/init.lua")) else {
            throw ValidationError("\(path) does not exist; give a plugin folder (with init.lua), a .lua file, or the name of a plugin in ./plugins")
        }
    }

    func run() throws {
        var options = FeatureRun.Options(path: path)
        options.format = format
        options.clock = clock
        options.untilMs = until
        options.timeLimitMs = limits.timeLimit ?? 1000
        options.memoryLimitMB = limits.memoryLimit ?? 512
        options.profile = limits.sandbox ? .sandboxed : .trusted
        options.color = format == .pretty && isatty(STDOUT_FILENO) != 0
        options.watch = watch
        let input: InputLines
        switch actions {
        case nil:
            input = isatty(STDIN_FILENO) != 0 ? InputLines(standardInput: true) : InputLines()
        case "-":
            input = InputLines(standardInput: false)
        case let file?:
            do { input = try InputLines(file: file) } catch { throw ValidationError("\(error)") }
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

    @Flag(name: .long, help: "Check under the sandboxed profile.")
    var sandbox = false

    func run() throws {
        var check = PluginCheck(path: path)
        check.profile = sandbox ? .sandboxed : .trusted
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
        discussion: """
            Behaves as lua5.4 FILE: arguments after FILE go to the script (`arg` and `...`),
            the words before it are at arg[-1], arg[-2]...; FILE - reads standard input;
            LUA_INIT_5_4 or LUA_INIT runs first. No time or memory limit unless given.
            """
    )

    @OptionGroup var limits: LimitOptions

    @Argument(help: "The Lua file to run.")
    var file: String

    @Argument(parsing: .captureForPassthrough, help: "Arguments for the script.")
    var arguments: [String] = []

    func run() throws {
        var runner = ScriptRunner(file: file, arguments: arguments)
        // lua5.4 puts everything before the script at negative indices of `arg`.
        let argv = CommandLine.arguments
        if argv.count >= arguments.count + 1, argv[argv.count - arguments.count - 1] == file {
            runner.precedingArguments = Array(argv[..<(argv.count - arguments.count - 1)])
        }
        runner.timeLimitMs = limits.timeLimit
        runner.memoryLimitMB = limits.memoryLimit
        runner.profile = limits.sandbox ? .sandboxed : .trusted
        let status = runner.run()
        if status != 0 { throw ExitCode(status) }
    }
}

struct Test: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run Lua specs (busted, with require \"moonflow.test\") and report every failure.",
        discussion: """
            PATHs are spec files or folders searched for *_spec.lua; with none, every
            plugins/*/spec/*_spec.lua under the current folder. Each file runs in a fresh
            Lua state. Ends with `N passed, N failed`; exit 0 only when nothing failed.
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

    @OptionGroup var limits: LimitOptions

    func run() throws {
        var options = SpecRunner.Options(paths: paths)
        options.filter = filter
        options.junitPath = junit
        options.tap = tap
        options.timeLimitMs = limits.timeLimit ?? 1000
        options.memoryLimitMB = limits.memoryLimit ?? 512
        options.profile = limits.sandbox ? .sandboxed : .trusted
        let status = SpecRunner(options: options).run()
        if status != 0 { throw ExitCode(status) }
    }
}

struct New: ParsableCommand {
    static let configuration = CommandConfiguration(
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
                  moonflow run \(plugins)/\(name)                # try it at the prompt: tick, then tickLater ms=500
                """)
        } catch let e as PluginScaffold.Refusal {
            FileHandle.standardError.write(Data("moonflow new: \(e.message)\n".utf8))
            throw ExitCode(e.isUsage ? 2 : 1)
        }
    }
}
