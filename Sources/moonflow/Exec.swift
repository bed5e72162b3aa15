import ArgumentParser
import Foundation
import MoonflowTool

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

    @Argument(
        parsing: .captureForPassthrough,
        help: "lua5.4's options, the Lua file to run (- for standard input) and its arguments.")
    var arguments: [String] = []

    /// `moonflow exec WORDS`: moonflow's own options first (checked, and `--help`, by
    /// ArgumentParser), then lua5.4's command line, read by lua5.4's rules.
    static func main(_ words: [String]) throws {
        var own = 0
        while own < words.count {
            let word = words[own]
            if word == "--time-limit" || word == "--memory-limit" {
                own = min(own + 2, words.count)
            } else if ["--sandbox", "--help"].contains(word) || word.hasPrefix("--time-limit=")
                || word.hasPrefix("--memory-limit=")
            {
                own += 1
            } else {
                break
            }
        }
        // (The captured arguments would swallow --help: it is asked here. `-h` is lua5.4's,
        // which has no such option.)
        if words[..<own].contains("--help") { throw CleanExit.helpRequest(Exec.self) }
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
        // Started as `moonflow-lua`: its messages start with the word it was started by, as
        // lua5.4's start with its argv[0]. (Not passed on to what the script starts.)
        if let name = ProcessInfo.processInfo.environment[ScriptRunner.programNameVariable] {
            unsetenv(ScriptRunner.programNameVariable)
            if !name.isEmpty { runner.programName = name }
        }
        let status = runner.run()
        if status != 0 { throw ExitCode(status) }
    }

    /// What `arg`'s lowest index holds, where lua5.4 keeps its own path: a command that
    /// starts `moonflow exec` again. `moonflow-lua` beside this binary, one word that
    /// scripts can run or quote; without it, this binary's path and `exec`.
    static var interpreter: [String] {
        let proc = URL(fileURLWithPath: "/proc/self/exe")
        let own =
            FileManager.default.fileExists(atPath: proc.path)
            ? proc.resolvingSymlinksInPath()
            : (Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])).resolvingSymlinksInPath()
        let wrapper = own.deletingLastPathComponent().appendingPathComponent("moonflow-lua")
        if FileManager.default.isExecutableFile(atPath: wrapper.path) { return [wrapper.path] }
        return [own.path, "exec"]
    }
}
