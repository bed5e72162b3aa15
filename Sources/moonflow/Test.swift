import ArgumentParser
import Foundation
import MoonflowDebug
import MoonflowHost
import MoonflowTool

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
            as a whole, its waits for services included, gets ten times that (10 s), plus \
            --seconds when an exploration's time budget is given.
            """
    )

    @Argument(help: "Spec files or folders (default: plugins/*/spec).")
    var paths: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Run only tests whose full name (describe names and it name) contains TEXT.", valueName: "TEXT"))
    var filter: String?

    @Option(name: .long, help: ArgumentHelp("Also write a JUnit XML report to FILE.", valueName: "FILE"))
    var junit: String?

    @Flag(name: .long, help: "Print TAP version 13 instead of the summary.")
    var tap = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Run N spec files at once, each in its own Lua state; output stays in file order (default: one per core).",
            valueName: "N"))
    var jobs: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Run only shard I of N: a stable subset of the files, for splitting a suite across CI machines.",
            valueName: "I/N"))
    var shard: String?

    @Flag(
        name: .long,
        help:
            "Explore plugins instead of running specs: PATHs are plugins (folders, or names in ./plugins; none: all), each sent random runs of its declared actions, checked after every step, a failure shrunk to a spec to paste."
    )
    var explore = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The seed of every virtual-clock run: each test store's random numbers (unless its opts.seed) and every exploration (T.explore in specs, and --explore), which repeats the runs a failure printed.",
            valueName: "N"))
    var seed: Int64?

    @Option(name: .long, help: ArgumentHelp("Runs per exploration (default: the spec's, else 100).", valueName: "N"))
    var runs: Int?

    @Option(
        name: .long,
        help: ArgumentHelp("Steps per run of an exploration (default: the spec's, else 50).", valueName: "N"))
    var length: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Steps per exploration, over all its runs and its shrinking: it stops there and reports what it found.",
            valueName: "N"))
    var steps: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Seconds per exploration (wall time), its own budget beside --time-limit: it stops there and reports what it found.",
            valueName: "S"))
    var seconds: Double?

    @Flag(
        name: .customLong("no-guided"),
        help:
            "Draw every run of every exploration uniformly (as T.explore's guided = false): no corpus of runs that reached something new, no numbers from the code."
    )
    var noGuided = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Serve a debugger for editors (the Debug Adapter Protocol) at [HOST:]PORT: breakpoints stop in the plugins' code and in the specs. One spec file runs at a time. See docs/debugging.md.",
            valueName: "[HOST:]PORT"))
    var debug: String?

    @Flag(
        name: .long,
        help: "With --debug: wait for the editor to attach and send its breakpoints before the first spec file loads.")
    var debugWait = false

    @Flag(
        name: .long,
        help:
            "Count the lines of the plugins' own Lua files the specs (and explorations) run: a table per file, and coverage/lcov.info in lcov's format."
    )
    var coverage = false

    @OptionGroup var limits: LimitOptions

    func validate() throws {
        if let jobs, jobs < 1 { throw ValidationError("--jobs \(jobs): give 1 or more files at once") }
        if let shard { _ = try parsedShard(shard) }
        if let runs, runs < 1 { throw ValidationError("--runs \(runs): give 1 or more runs") }
        if let length, length < 1 { throw ValidationError("--length \(length): give 1 or more steps") }
        if let steps, steps < 1 { throw ValidationError("--steps \(steps): give 1 or more steps") }
        if let seconds, !(seconds > 0 && seconds <= 86400) {
            throw ValidationError("--seconds \(seconds): give more than 0 and at most 86400 (a day)")
        }
        try validateDebugOptions(debug, wait: debugWait)
        if debug != nil, let jobs, jobs > 1 {
            throw ValidationError("--debug runs one spec file at a time; drop --jobs \(jobs)")
        }
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
        options.exploring = explore
        options.coveragePath = coverage ? "coverage/lcov.info" : nil
        if let debug {
            // One spec file at a time: the editor follows one thread.
            options.jobs = 1
            let server = try DebugServer.start(debug, name: "moonflow test", wait: debugWait)
            options.prepareHost = server.prepare
            // Specs run on the virtual clock: the debugger can go back by running the file again.
            let travel = SpecTravel()
            options.travel = travel
            // No paths: every spec under ./plugins, which the sources look at anyway.
            server.server.controller.repeats(by: { travel.request() }, loading: LoadedSources(for: paths))
        }
        options.setExplore(
            seed: seed, runs: runs, length: length, steps: steps, seconds: seconds, guided: noGuided ? false : nil)
        let status = SpecRunner(options: options).run()
        if status != 0 { throw ExitCode(status) }
    }
}
