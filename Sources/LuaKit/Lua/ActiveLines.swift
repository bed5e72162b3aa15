import Foundation

// The lines of code a Lua file has, for `moonflow test --coverage` (which lines can run)
// and the debugger (where a breakpoint lands).
/// The lines of a Lua file that can run: every function's active lines (as
/// `debug.getinfo(f, "L")` gives them), read from the bytecode `string.dump` writes, so
/// functions that never ran (or were never made) count too.
package enum ActiveLines {
    package struct Lines: Sendable {
        package var lines = Set<Int>()
        /// Lines that hold only a function's closing return (its `end`).
        package var closingOnly = Set<Int>()
        /// Each function of the file but its main chunk, in line order: where it is defined,
        /// and its first line that can run (what coverage counts its calls by).
        package var functions: [Function] = []
    }

    package struct Function: Sendable, Equatable {
        package let line: Int
        package let first: Int
    }

    package static func of(file: String) -> Lines {
        guard let source = FileManager.default.contents(atPath: file),
            let dump = try? bytecode(of: source, name: file)
        else { return Lines() }
        var reader = Reader(bytes: dump)
        return (try? reader.chunk()) ?? Lines()
    }

    /// The file compiled (not run) and dumped with its debug information, in a state of its own.
    package static func bytecode(of source: Data, name: String) throws -> [UInt8] {
        let lua = try LuaState(profile: .trusted, memoryLimit: 256 << 20, timeLimitMs: 5000)
        defer { lua.close() }
        let dumper = try lua.load(
            string: """
                local source, name = ...
                local f = load(source, "@" .. name, "t")
                return f and string.dump(f) or ""
                """, name: "moonflow.coverage")
        let result = try lua.call(
            dumper, [.value(.string(LuaString(bytes: Array(source)))), .value(.string(LuaString(name)))])
        guard case .string(let bytes)? = result.first else { return [] }
        return Array(bytes.bytes)
    }

    /// Lua 5.4's dump format (ldump.c): a header, then each function with its code, constants,
    /// upvalues, nested functions and line information.
    struct Reader {
        /// Lua 5.4's OP_TAILCALL, and OP_RETURN, OP_RETURN0, OP_RETURN1 (lopcodes.h).
        static let tailCall: UInt8 = 69
        static let returns: Set<UInt8> = [70, 71, 72]
        let bytes: [UInt8]
        var at = 0
        struct Short: Error {}

        mutating func byte() throws -> UInt8 {
            guard at < bytes.count else { throw Short() }
            defer { at += 1 }
            return bytes[at]
        }
        mutating func skip(_ n: Int) throws {
            guard n >= 0, at + n <= bytes.count else { throw Short() }
            at += n
        }
        mutating func size() throws -> Int {
            var x = 0
            while true {
                let b = try byte()
                x = (x << 7) | Int(b & 0x7f)
                if b & 0x80 != 0 { return x }
            }
        }
        mutating func string() throws { let n = try size(); if n > 0 { try skip(n - 1) } }

        mutating func chunk() throws -> Lines {
            // "\x1bLua", version, format, LUAC_DATA (6), sizes of Instruction, lua_Integer,
            // lua_Number, LUAC_INT (8), LUAC_NUM (8), then the main function's upvalue count.
            guard bytes.count > 32, bytes[0] == 0x1b, bytes[4] == 0x54 else { throw Short() }
            at = 12
            let instruction = Int(try byte())
            try skip(2 + 8 + 8 + 1)
            var lines = Lines()
            try function(&lines, instruction: instruction)
            lines.functions.sort { ($0.line, $0.first) < ($1.line, $1.first) }
            return lines
        }

        mutating func function(_ out: inout Lines, instruction: Int) throws {
            try string()
            let lineDefined = try size()
            _ = try size()  // lastlinedefined
            try skip(1)  // numparams
            let vararg = try byte() != 0
            try skip(1)  // maxstacksize
            let code = try size()
            // Opcodes (the low 7 bits of each little-endian instruction): a return right after
            // a tail call (`return f(x)`) never runs, so its line is not one that can.
            var opcodes: [UInt8] = []
            for pc in 0..<code {
                guard at + instruction <= bytes.count else { throw Short() }
                opcodes.append(bytes[at] & 0x7f)
                _ = pc
                at += instruction
            }
            for _ in 0..<(try size()) {
                switch try byte() {
                case 0x03, 0x13: try skip(8)  // integer, float
                case 0x04, 0x14: try string()  // short, long string
                default: break  // nil, false, true
                }
            }
            try skip((try size()) * 3)  // upvalues: instack, idx, kind
            for _ in 0..<(try size()) { try function(&out, instruction: instruction) }
            let count = try size()
            var deltas: [Int] = []
            for _ in 0..<count { deltas.append(Int(Int8(bitPattern: try byte()))) }
            var absolute: [Int: Int] = [:]
            for _ in 0..<(try size()) {
                let pc = try size()
                absolute[pc] = try size()
            }
            for _ in 0..<(try size()) { try string(); _ = try size(); _ = try size() }  // locals
            for _ in 0..<(try size()) { try string() }  // upvalue names
            // ldebug.c's collectvalidlines: a vararg function's first instruction (VARARGPREP) is left out.
            var line = lineDefined
            var active: [Int] = []
            for pc in 0..<count {
                line = deltas[pc] == -0x80 ? (absolute[pc] ?? line) : line + deltas[pc]
                if pc == 0 && vararg { continue }
                let afterTailCall =
                    pc > 0 && pc < opcodes.count && Self.returns.contains(opcodes[pc])
                    && opcodes[pc - 1] == Self.tailCall
                if !afterTailCall { active.append(line) }
            }
            guard let last = active.last else { return }
            if lineDefined > 0, let first = active.first {
                out.functions.append(Function(line: lineDefined, first: first))
            }
            // The implicit return every function ends with, on its `end`: alone on that line, it
            // runs only when the function falls off its end.
            if active.dropLast().contains(last) {
                out.lines.formUnion(active)
            } else {
                out.lines.formUnion(active.dropLast())
                if !out.lines.contains(last) { out.closingOnly.insert(last) }
            }
        }
    }
}
