import Foundation
import LuaKit
import MoonflowHost
import MoonflowLua
import Streams

/// Runs a Lua file (or standard input, for `-`) the way `lua5.4 FILE args...` does, with
/// `moonflow` preloaded: what `moonflow exec` does. After the main chunk returns it keeps
/// running until no timer or service work remains (`mf.timer(50, "tick"):subscribe(print)`
/// prints `tick` 50 ms later, then the program ends).
///
///     let status = ScriptRunner(file: "hello.lua", arguments: ["a"]).run()
///
/// As lua5.4: FILE `-` reads standard input; a first line starting with `#`
/// and a UTF-8 BOM are skipped; `arg[0]` is FILE, `arg[1...]` its arguments
/// and the words before FILE are at negative indices; `LUA_INIT_5_4` or
/// `LUA_INIT` (`@file` or code) runs first; an error prints
/// `moonflow: message` and its traceback, then the state is closed.
package struct ScriptRunner: Sendable {
    package var file: String
    package var arguments: [String]
    package var profile: LuaState.Profile = .trusted
    package var timeLimitMs: Int64?
    package var memoryLimitMB: Int?
    /// The command line before FILE (`arg[-n]` ... `arg[-1]`), as lua5.4 keeps
    /// its own name and options: `["moonflow", "exec", "--time-limit", "500"]`.
    package var precedingArguments = ["moonflow"]
    /// The environment, for `LUA_INIT_5_4` and `LUA_INIT`.
    package var environment = ProcessInfo.processInfo.environment
    /// Where error messages go (standard error).
    package var writeError: @Sendable (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }

    package init(file: String, arguments: [String] = []) {
        self.file = file
        self.arguments = arguments
    }

    /// Runs the file; errors go to standard error as `moonflow: message` with the traceback.
    /// - Returns: the exit status (0 success, 1 error).
    package func run() -> Int32 {
        let lua: LuaState
        let clock = RealTimeScheduler()
        let bridge: LuaBridge
        do {
            lua = try LuaState(profile: profile, memoryLimit: memoryLimitMB.map(FeatureHost.bytes(megabytes:)), timeLimitMs: timeLimitMs, standalone: true)
            // The whole module, on real time driven from this thread: timers and
            // services started by the script run after the main chunk returns.
            bridge = try LuaBridge(lua: lua, scheduler: clock)
            try MoonflowModule.install(in: lua, bridge: bridge)
            var arg = LuaTable()
            for (i, word) in precedingArguments.reversed().enumerated() { arg[.integer(Int64(-1 - i))] = .string(LuaString(word)) }
            arg[.integer(0)] = .string(LuaString(file))
            for (i, a) in arguments.enumerated() { arg[.integer(Int64(i + 1))] = .string(LuaString(a)) }
            try lua.setGlobal("arg", .value(.table(arg)))
            // A sandboxed script requires only modules beside it.
            try lua.setSandboxModuleFolder(PathText.parent(of: file))
        } catch {
            writeError("moonflow: \(FlagHints.add(to: "\(error)"))\n")
            return 1
        }
        defer { lua.close() }  // after the message, as lua5.4 reports before closing (not a stuck state)
        // On a thread of its own: a call blocked past what the time limit can stop (in C)
        // is left behind, and the program ends with a message instead of hanging.
        let status = Locked<Int32>(0)
        let script = UnsafeTransfer(value: (self, lua, clock, bridge))
        let ended = StuckWatch.run(isStuck: { lua.isStuck }) {
            let (runner, lua, clock, bridge) = script.value
            if let message = runner.runInit(lua) ?? lua.runAsMain(runner.file == "-" ? .standardInput : .file(runner.file), arguments: runner.arguments) {
                runner.writeError("moonflow: \(message)\n")
                status.withLock { $0 = 1 }
                return
            }
            clock.runUntilIdle(pending: bridge.pending)
        }
        guard ended else {
            let limit = timeLimitMs.map { " of \($0) ms" } ?? ""
            writeError("moonflow: a call ran on past the time limit\(limit) in code that cannot be interrupted (a blocking C or Swift function, such as os.execute or io.read); the program ends without waiting for it\n")
            return 1
        }
        return status.withLock { $0 }
    }

    /// What the script's thread is handed: the state and its clock, used there alone.
    private struct UnsafeTransfer<Value>: @unchecked Sendable { let value: Value }

    /// `LUA_INIT_5_4`, else `LUA_INIT`: `@FILE` runs that file, anything else runs as code.
    private func runInit(_ lua: LuaState) -> String? {
        let (variable, value) = environment["LUA_INIT_5_4"].map { ("LUA_INIT_5_4", $0) }
            ?? environment["LUA_INIT"].map { ("LUA_INIT", $0) } ?? ("", "")
        guard !variable.isEmpty else { return nil }
        if value.hasPrefix("@") { return lua.runAsMain(.file(String(value.dropFirst()))) }
        return lua.runAsMain(.string(value, name: variable))
    }
}
