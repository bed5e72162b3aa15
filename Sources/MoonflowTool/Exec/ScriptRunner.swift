import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import MoonflowRun
import Streams

/// Runs a `lua5.4` command line with `moonflow` preloaded: what `moonflow exec` does.
/// After the main chunk (and `-i`'s loop) it keeps running until no timer or service
/// work remains (`mf.timer(50, "tick"):subscribe(print)` prints `tick` 50 ms later,
/// then the program ends).
///
///     let status = ScriptRunner(StandaloneCommandLine(["moonflow-lua", "hello.lua", "a"])).run()
///
/// As lua5.4 (lua.c): `-v` (or `-i`) prints the version line first; `LUA_INIT_5_4`
/// or `LUA_INIT` (`@file` or code) runs unless `-E`; then `-e`, `-l` and `-W` in
/// their order; then the script (a first line starting with `#` and a UTF-8 BOM
/// skipped), called with the items of `arg` as they are then; then `-i`'s loop. With
/// no script, `-e` nor `-v`, standard input is the script, or on a terminal the
/// loop runs. An error prints `moonflow: message` (`programName`) and its traceback, and stops
/// the rest; the state is closed after the message. Ctrl-C while Lua runs is the
/// catchable error `interrupted!`, and a second one ends the program.
package struct ScriptRunner: Sendable {
    package var commandLine: StandaloneCommandLine
    package var profile: LuaState.Profile = .trusted
    package var timeLimitMs: Int64?
    package var memoryLimitMB: Int?
    /// The environment, for `LUA_INIT_5_4` and `LUA_INIT`.
    package var environment = ProcessInfo.processInfo.environment
    /// Whether standard input is a terminal (the loop, not a script, with nothing to run).
    package var inputIsTerminal = isatty(0) != 0
    /// Where error messages go (standard error).
    package var writeError: @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }
    /// What starts each error message, as lua5.4 starts it with its `argv[0]`: `moonflow`,
    /// or the word `moonflow-lua` was started by (`ScriptRunner.programNameVariable`).
    package var programName = "moonflow"
    /// What `moonflow-lua` sets to its own `argv[0]` before it starts `moonflow exec`.
    package static let programNameVariable = "MOONFLOW_LUA_ARGV0"

    package init(_ commandLine: StandaloneCommandLine) {
        self.commandLine = commandLine
    }

    /// Runs the command line; errors go to standard error as `moonflow: message` with the traceback.
    /// - Returns: the exit status (0 success, 1 error or a bad option).
    package func run() -> Int32 {
        if let bad = commandLine.badOption {
            writeError(
                StandaloneCommandLine.usage(
                    badOption: bad, name: programName,
                    command: programName == "moonflow" ? "moonflow exec" : programName))
            return 1
        }
        if commandLine.printsVersion { LuaState.printVersion() }
        LuaState.catchInterruptsAsLuaDoes()
        let lua: LuaState
        let clock = RealTimeScheduler()
        let bridge: LuaBridge
        do {
            lua = try LuaState(
                profile: profile, memoryLimit: memoryLimitMB.map(FeatureHost.bytes(megabytes:)),
                timeLimitMs: timeLimitMs,
                standalone: true, ignoreEnvironment: commandLine.ignoresEnvironment)
            // The whole module, on real time driven from this thread: timers and
            // services started by the script run after the main chunk returns.
            bridge = try LuaBridge(lua: lua, scheduler: clock)
            try MoonflowModule.install(in: lua, bridge: bridge)
            var arg = LuaTable()
            for (i, word) in commandLine.argTable { arg[.integer(i)] = .string(LuaString(word)) }
            try lua.setGlobal("arg", .value(.table(arg)))
            // A sandboxed script requires only modules beside it (beside the current folder without one).
            let file = commandLine.script.map { commandLine.words[$0] } ?? "-"
            try lua.setSandboxModuleFolder(
                commandLine.scriptIsStandardInput || commandLine.script == nil ? "." : PathText.parent(of: file))
        } catch {
            writeError("\(programName): \(FlagHints.add(to: "\(error)"))\n")
            return 1
        }
        defer { lua.close() }  // after the message, as lua5.4 reports before closing (not a stuck state)
        // On a thread of its own: a call blocked past what the time limit can stop (in C)
        // is left behind, and the program ends with a message instead of hanging.
        let status = Locked<Int32>(0)
        let script = UnsafeTransfer(value: (self, lua, clock, bridge))
        let ended = StuckWatch.run(isStuck: { lua.isStuck }) {
            let (runner, lua, clock, bridge) = script.value
            if let message = runner.runSteps(lua) {
                runner.writeError("\(runner.programName): \(message)\n")
                status.withLock { $0 = 1 }
                return
            }
            clock.runUntilIdle(pending: bridge.pending)
        }
        guard ended else {
            let limit = timeLimitMs.map { " of \($0) ms" } ?? ""
            writeError(
                "\(programName): a call ran on past the time limit\(limit) in code that cannot be interrupted (a blocking C or Swift function, such as os.execute or io.read); the program ends without waiting for it\n"
            )
            return 1
        }
        return status.withLock { $0 }
    }

    /// lua.c's order: LUA_INIT, the steps, the script, the loop (or standard input).
    /// - Returns: the message of the first error, which stops the rest.
    private func runSteps(_ lua: LuaState) -> String? {
        let line = commandLine
        if !line.ignoresEnvironment, let message = runInit(lua) { return message }
        for step in line.steps {
            let message: String?
            switch step {
            case .execute(let code): message = lua.runAsMain(.string(code, name: "(command line)"))
            case .require(let module, let global): message = lua.requireAsMain(module, into: global)
            case .warningsOn: lua.turnWarningsOn(); message = nil
            }
            if let message { return message }
        }
        if let script = line.script {
            let chunk: LuaState.MainChunk = line.scriptIsStandardInput ? .standardInput : .file(line.words[script])
            if let message = lua.runAsMain(chunk, with: .argTable) { return message }
        }
        if line.interactive { return lua.readEvalPrintLoop(echo: !inputIsTerminal) }
        if line.script == nil && !line.executes && !line.printsVersion {
            guard inputIsTerminal else {
                // lua5.4 reports an error here but still exits 0.
                if let message = lua.runAsMain(.standardInput) { writeError("\(programName): \(message)\n") }
                return nil
            }
            LuaState.printVersion()
            return lua.readEvalPrintLoop(echo: false)
        }
        return nil
    }

    /// What the script's thread is handed: the state and its clock, used there alone.
    private struct UnsafeTransfer<Value>: @unchecked Sendable { let value: Value }

    /// `LUA_INIT_5_4`, else `LUA_INIT`: `@FILE` runs that file, anything else runs as code.
    private func runInit(_ lua: LuaState) -> String? {
        let (variable, value) =
            environment["LUA_INIT_5_4"].map { ("LUA_INIT_5_4", $0) }
            ?? environment["LUA_INIT"].map { ("LUA_INIT", $0) } ?? ("", "")
        guard !variable.isEmpty else { return nil }
        if value.hasPrefix("@") { return lua.runAsMain(.file(String(value.dropFirst()))) }
        return lua.runAsMain(.string(value, name: variable))
    }
}
