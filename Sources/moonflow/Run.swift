import ArgumentParser
import Foundation
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
import MoonflowSQLite

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

    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp("Stop when the run's clock reaches MS.", valueName: "MS"))
    var until: Int?

    @Flag(name: .long, help: "Reload the plugin on every save, keeping the state; run until Ctrl-C (real clock).")
    var watch = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The seed of the plugins' random numbers (math.random, env.random, env.uuid); default: 0 on the virtual clock, a fresh one on the real clock.",
            valueName: "N"))
    var seed: Int64?

    @Option(
        name: .long,
        help: "jsonl state events: full (the whole state each time) or patch (a JSON Patch against the previous state)."
    )
    var state: StateOutput = .full

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Keep the SQLite files plugins declare in DIR (made when missing), or :memory: for none.", valueName: "DIR")
    )
    var db: String?

    @Option(name: .long, help: "Colour pretty output: auto (on a terminal, unless NO_COLOR is set), always or never.")
    var color: ColorMode = .auto

    // Shown in the discussion instead: the help's option list can only show a required value.
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Serve a live inspector at HOST:PORT (default 127.0.0.1:0); the value may be left out.",
            valueName: "HOST:PORT", visibility: .hidden))
    var inspect: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --inspect: keep the last N frames for pages that connect late, and for jump (default 10000).",
            valueName: "N"))
    var inspectFrames: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --inspect: keep at most MB megabytes of frames, whole states and actions, and queue at most that much for a page that does not read (default 64).",
            valueName: "MB"))
    var inspectMemory: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Write the session (inputs with their times, events) to FILE as JSON Lines, for moonflow replay.",
            valueName: "FILE"))
    var record: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Serve a debugger for editors (the Debug Adapter Protocol) at [HOST:]PORT: 127.0.0.1 unless a host is named; port 0 picks a free one. See docs/debugging.md.",
            valueName: "[HOST:]PORT"))
    var debug: String?

    @Flag(
        name: .long,
        help: "With --debug: wait for the editor to attach and send its breakpoints before the plugin loads.")
    var debugWait = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --debug on the virtual clock: the most inputs (input lines and service calls) kept to go back (default 100000); past it the run lets them go and cannot go back.",
            valueName: "N"))
    var debugHistory: Int?

    @OptionGroup var limits: LimitOptions

    /// `--inspect` may stand without its value: then it gets the default address.
    static func defaultingInspect(_ arguments: [String]) -> [String] {
        var out: [String] = []
        for (i, a) in arguments.enumerated() {
            out.append(a)
            guard a == "--inspect" else { continue }
            let next = i + 1 < arguments.count ? arguments[i + 1] : nil
            let isAddress =
                next.map {
                    $0.range(of: #"^(\[[0-9A-Fa-f:.]+\]|[^/\s:]*)?:?[0-9]+$"#, options: .regularExpression) != nil
                } ?? false
            if !isAddress { out.append("127.0.0.1:0") }
        }
        return out
    }

    /// What was asked, for `RunRequest`'s checks and run (shared with the quick parse).
    var request: RunRequest {
        RunRequest(
            path: path, actions: actions, format: format, clock: clock, until: until, watch: watch,
            state: state, db: db, color: color, inspect: inspect, inspectFrames: inspectFrames,
            inspectMemory: inspectMemory, record: record, timeLimit: limits.timeLimit,
            memoryLimit: limits.memoryLimit, sandbox: limits.sandbox, debug: debug, debugWait: debugWait,
            debugHistory: debugHistory, seed: seed)
    }

    // `limits` validates itself (an option group).
    func validate() throws { try request.validate() }

    func run() throws { try request.run() }
}
