import ArgumentParser
import LuaKit
import MoonflowHost

@main
struct Moonflow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "moonflow",
        abstract: "Run, test and reload app features written in Lua on a Swift runtime.",
        subcommands: [Exec.self]
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

    func validate() throws {
        if let t = timeLimit, t <= 0 { throw ValidationError("--time-limit must be a positive number of milliseconds") }
        if let m = memoryLimit, m <= 0 { throw ValidationError("--memory-limit must be a positive number of megabytes") }
    }
}

struct Exec: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a Lua file like lua5.4 FILE, with `moonflow` preloaded.",
        discussion: "Arguments after FILE go to the script (`arg` and `...`). No time or memory limit unless given."
    )

    @OptionGroup var limits: LimitOptions

    @Argument(help: "The Lua file to run.")
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
