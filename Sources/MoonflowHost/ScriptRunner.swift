import Foundation
import LuaKit
import MoonflowLua

/// Runs a Lua file (or standard input, for `-`) the way `lua5.4 FILE args...` does, with
/// `moonflow` preloaded: what `moonflow exec` does. After the main chunk returns it keeps
/// running until no timer or service work remains (`mf.timer(50, "tick"):subscribe(print)`
/// prints `tick` 50 ms later, then the program ends).
///
///     let status = ScriptRunner(file: "hello.lua", arguments: ["a"]).run()
public struct ScriptRunner: Sendable {
    public var file: String
    public var arguments: [String]
    public var profile: LuaState.Profile = .trusted
    public var timeLimitMs: Int64?
    public var memoryLimitMB: Int?
    /// `arg[-1]`, the interpreter's name.
    public var interpreter = "moonflow"

    public init(file: String, arguments: [String] = []) {
        self.file = file
        self.arguments = arguments
    }

    /// Runs the file; errors go to standard error with `file:line` and the traceback.
    /// - Returns: the exit status (0 success, 1 error).
    public func run() -> Int32 {
        do {
            let lua = try LuaState(profile: profile, memoryLimit: memoryLimitMB.map { $0 << 20 }, timeLimitMs: timeLimitMs)
            defer { lua.close() }
            // The whole module, on real time driven from this thread: timers and
            // services started by the script run after the main chunk returns.
            let clock = RealTimeScheduler()
            let bridge = try LuaBridge(lua: lua, scheduler: clock)
            try MoonflowModule.install(in: lua, bridge: bridge)
            var arg = LuaTable()
            arg[.integer(-1)] = .string(LuaString(interpreter))
            arg[.integer(0)] = .string(LuaString(file))
            for (i, a) in arguments.enumerated() { arg[.integer(Int64(i + 1))] = .string(LuaString(a)) }
            try lua.setGlobal("arg", .value(.table(arg)))
            // `-` is standard input, as for lua5.4 (messages say `stdin:LINE`).
            let chunk = file == "-"
                ? try lua.load(string: String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self), name: "stdin")
                : try lua.load(file: file)
            try lua.call(chunk, arguments.map { .value(.string(LuaString($0))) }) { _ in () }
            clock.runUntilIdle(pending: bridge.pending)
            return 0
        } catch {
            FileHandle.standardError.write(Data("moonflow: \(error)\n".utf8))
            return 1
        }
    }
}
