import Foundation
import LuaKit
import MoonflowHost
import MoonflowLua

/// Under `moonflow run`, `test`, `check` and `replay` the host owns the process and
/// its standard output: `os.exit` is an error that says so (the rest of the input
/// still runs), and `print`, `io.write` and `io.stdout:write` become lines handed to
/// `write`, so `--format jsonl` stays one JSON object per line.
///
///     try HostOwnedProcess.install(in: host.lua, command: "run") { text, location in
///         emit(.log(message: text, location: location))
///     }
package enum HostOwnedProcess {
    /// - Parameters:
    ///   - command: named in the `os.exit` error (`run`, `test`).
    ///   - write: gets each print's or write's text (one trailing newline dropped from a
    ///     write) and the caller's `file:line`.
    package static func install(
        in lua: LuaState, command: String,
        write: @escaping (String, String?) -> Void
    ) throws {
        // As Lua's print shows values: strings bare, everything else as `description`, tab-separated.
        try lua.setGlobal(
            "print",
            .function { args in
                let text = (0..<args.count).map { i in
                    (try? args.value(i + 1)).map(printed) ?? "<\(args.typeName(i + 1))>"
                }
                write(text.joined(separator: "\t"), args.callerLocation)
                return []
            })
        let exit: LuaFunction = { _ in
            throw LuaArgumentError(
                message: "os.exit is not available under moonflow \(command): the host owns the process. "
                    + "Return from the handler or raise an error with error(...) instead")
        }
        let os = try lua.ref(global: "os")
        if os.isTable { try lua.rawSet(os, "exit", .function(exit)) }
        let io = try lua.ref(global: "io")
        guard io.isTable else { return }  // the sandboxed profile has no io
        try lua.rawSet(
            io, "write",
            .function { args in
                write(try text(of: args, from: 1), args.callerLocation)
                return []
            })
        let stdout = try lua.makeTable([
            (
                "write",
                .function { args in
                    write(try text(of: args, from: 2), args.callerLocation)
                    return []
                }
            ),
            ("flush", .function { _ in [] }),
            ("setvbuf", .function { _ in [.value(true)] }),
            (
                "close",
                .function { _ in
                    throw LuaArgumentError(message: "io.stdout belongs to moonflow \(command) and cannot be closed")
                }
            ),
        ])
        try lua.rawSet(io, "stdout", .ref(stdout))
    }

    private static func printed(_ value: LuaValue) -> String {
        if case .string(let s) = value { return s.description }
        return value.description
    }

    /// The arguments from `first` on as `io.write` writes them (strings, and
    /// numbers as `%d` or `%.14g`).
    private static func text(of args: LuaSlots, from first: Int) throws -> String {
        var out = ""
        if first <= args.count {
            for i in first...args.count {
                let type = args.typeName(i)
                guard type == "string" || type == "number" else { throw args.bad(i - first + 1, "write", "string") }
                switch try args.value(i) {
                case .string(let s): out += s.description
                case .integer(let n): out += String(n)
                case .number(let d): out += String(format: "%.14g", d)
                default: throw args.bad(i - first + 1, "write", "string")
                }
            }
        }
        if out.hasSuffix("\n") { out.removeLast() }
        return out
    }
}
