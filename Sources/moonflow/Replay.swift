import ArgumentParser
import Foundation
import MoonflowDebug
import MoonflowHost
import MoonflowTool

struct Replay: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Re-run a recorded session (moonflow run --record FILE) and compare every event.",
        discussion: """
            The inputs are sent at their recorded times on the virtual clock. \
            The first event that differs from the recording (a state, action, \
            mutation, effect, internal effect, call, invariant, error or log; \
            numbers by value and type; on a virtual-clock recording its time \
            too) is printed as a diff (- recorded, + now). The recorded plugin \
            path is resolved inside --plugins DIR (default: the recording's folder) and \
            runs sandboxed unless --trusted is given. Exit status: 0 identical, \
            1 an event differs or a recorded action or mutation no longer \
            validates, 2 the recording cannot be read.
            """
    )

    @Argument(help: "A recording made with moonflow run PATH --record FILE.")
    var file: String

    @Flag(name: .long, help: "Rewrite FILE from the run as the code behaves now.")
    var update = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The folder the recording's plugin path is resolved in (default: the recording's own folder).",
            valueName: "DIR"))
    var plugins: String?

    @Flag(name: .long, help: "Run the plugin with the trusted profile (io, os, debug) instead of the sandbox.")
    var trusted = false

    @OptionGroup var limits: LimitOptions

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Serve a debugger for editors (the Debug Adapter Protocol) at [HOST:]PORT: breakpoints, steps and going back (stepBack, reverseContinue) in the replayed run. See docs/debugging.md.",
            valueName: "[HOST:]PORT"))
    var debug: String?

    @Flag(
        name: .long,
        help: "With --debug: wait for the editor to attach and send its breakpoints before the plugin loads.")
    var debugWait = false

    func validate() throws {
        try validateDebugOptions(debug, wait: debugWait)
        if debug != nil, update {
            throw ValidationError("--debug replays to compare; drop --update to debug the replay")
        }
        if trusted && limits.sandbox {
            throw ValidationError(
                "--trusted and --sandbox contradict each other; a replay is sandboxed unless --trusted is given")
        }
    }

    func run() throws {
        var replay = SessionReplay(file: file)
        replay.update = update
        replay.timeLimitMs = limits.timeLimit ?? LimitOptions.defaultTimeLimitMs
        replay.memoryLimitMB = limits.memoryLimit ?? LimitOptions.defaultMemoryLimitMB
        replay.profile = trusted ? .trusted : .sandboxed
        replay.pluginsFolder = plugins
        if let debug {
            let handle = try DebugServer.start(debug, name: file, wait: debugWait)
            replay.debugger = handle.server
            replay.debugWait = handle.wait
        }
        let status = replay.run()
        if status != 0 { throw ExitCode(status) }
    }
}
