import ArgumentParser
import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
import MoonflowRun
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
    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp(
            "Stop any one Lua call after MS milliseconds (default: \(defaultTimeLimitMs) for run and check, none for exec).",
            valueName: "MS"))
    var timeLimit: Int64?

    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp(
            "Cap the Lua state's memory at MB megabytes (default: \(defaultMemoryLimitMB) for run and check, none for exec).",
            valueName: "MB"))
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
            throw ValidationError(
                "--memory-limit must be a number of megabytes from 1 to \(LimitOptions.maxMemoryLimitMB) (got \(m))")
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
            throw ValidationError(
                "\(path) is a folder without init.lua; a plugin folder needs an init.lua that returns mf.feature{...}")
        }
        return
    }
    let isPluginName = !path.contains("/") && !path.hasSuffix(".lua")
    if isPluginName && fm.fileExists(atPath: "plugins/\(path)/init.lua") { return }
    throw ValidationError(
        "\(path) does not exist; give a plugin folder (with init.lua), a .lua file, or the name of a plugin in ./plugins"
    )
}
