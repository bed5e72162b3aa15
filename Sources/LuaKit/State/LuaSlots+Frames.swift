import CLua
import CLuaShim

/// One frame of a paused Lua thread's stack, as a debugger lists it.
package struct LuaFrame: Equatable, Sendable {
    /// The chunk's name as loaded: `plugins/counter/init.lua` (the `@` dropped), or
    /// `[C]` for a C or Swift function.
    package let source: String
    /// The line running now; nil when not known (a C function).
    package let line: Int?
    /// Where the function starts (0 for a main chunk); nil for a C function.
    package let lineDefined: Int?
    /// How its caller named the function (`reduce`, `add`), when it did.
    package let name: String?
    /// `Lua`, `C` or `main`.
    package let what: String
    /// Whether the code is a plugin's or a spec's file (a chunk named `@file`, or a `.lua`
    /// file a plugin source gave as text, `=dev:counter/init.lua`), not a C function,
    /// Moonflow's own Lua (`[moonflow ...]`, `moonflow.task`) nor an installed Lua library
    /// (busted and luassert, in a `share/lua/` or `lib/lua/` tree): what a debugger shows
    /// (debughook.c's `visible` is the same rule).
    package let isFile: Bool
}

/// A variable as a debugger shows it: a name, its value as text, its Lua type and,
/// for a table, where to list its fields (`fields(of:)`).
package struct LuaVariable: Equatable, Sendable {
    package let name: String
    package let text: String
    package let type: String
    /// For a table: its place in the holder the listing was made with.
    package let ref: Int?
}

/// What a debugger reads of the Lua code a Swift function was called from (the same
/// reads a paused thread answers): its frames, the locals and upvalues of each, and the
/// fields of a table among them, all without running a metamethod. Tables found are
/// kept in `holder` (a Lua table the caller owns) so that their fields can be listed
/// later, as long as the holder lives.
extension LuaSlots {
    /// The frames from `level` (1: the Lua code that called this function) outwards.
    package func frames(from level: Int = 1, limit: Int = 200) -> [LuaFrame] {
        guard level >= 0, limit > 0 else { return [] }
        var raw = [mf_frame](repeating: mf_frame(), count: limit)
        let n = Int(mf_frames(L, Int32(level), &raw, Int32(limit)))
        return raw.prefix(n).map { frame in
            let source = frame.source.map { String(cString: $0) } ?? "?"
            let what = frame.what.map { String(cString: $0) } ?? "?"
            return LuaFrame(
                source: source.hasPrefix("@") || source.hasPrefix("=") ? String(source.dropFirst()) : source,
                line: frame.line > 0 ? Int(frame.line) : nil,
                lineDefined: frame.linedefined >= 0 && what != "C" ? Int(frame.linedefined) : nil,
                name: frame.name.map { String(cString: $0) }, what: what,
                isFile: source.hasPrefix("@")
                    ? !source.hasPrefix("@[moonflow") && !source.contains("/share/lua/")
                        && !source.contains("/lib/lua/")
                    : source.hasPrefix("=") && source.hasSuffix(".lua"))
        }
    }

    /// The locals (`.locals`) or upvalues (`.upvalues`) of frame `level`, in declaration order.
    /// - Throws: `LuaError` when there is no such frame.
    package func variables(_ kind: LuaVariableKind, level: Int, holder: LuaRef) throws -> [LuaVariable] {
        try listing(holder: holder) { mf_variables(L, -1, Int32(level), kind.code, 0) }
    }

    /// The fields of the table a listing put in `holder` at `ref`: the array part in order,
    /// then the rest by name (at most 1000 entries).
    package func fields(of ref: Int, holder: LuaRef) throws -> [LuaVariable] {
        let listed = try listing(holder: holder) { mf_variables(L, -1, 0, Int32(UInt8(ascii: "t")), lua_Integer(ref)) }
        // The array part comes first, in order; the rest in the table's own order, which
        // changes from run to run: sorted, an editor shows the same table the same way.
        let arrayCount = listed.prefix { $0.name.hasPrefix("[") && Int($0.name.dropFirst().dropLast()) != nil }.count
        return Array(listed.prefix(arrayCount)) + listed.dropFirst(arrayCount).sorted { $0.name < $1.name }
    }

    /// The value of the Lua expression `expression` in frame `level`: read from its locals,
    /// upvalues and globals, with every table read-only to it. A table it gives is kept in
    /// `holder` (its `ref`). It runs at most 2000 ms of the thread's CPU time (as a call's time
    /// limit counts), as a call of its own while a stopped feature's limit stays held; past
    /// that it fails with "evaluate ran longer than 2000 ms and was stopped; the run is as it
    /// was", which no `pcall` inside the expression can catch, and the stopped thread's time
    /// limit and hook are as they were.
    /// - Throws: `LuaError` for a mistake in the expression, an error while reading, or the stop.
    package func evaluate(_ expression: String, level: Int, holder: LuaRef) throws -> LuaVariable {
        try evaluated(expression, holder: holder) { mf_evaluate(L, -1, Int32(level), $0, $1) }
    }

    /// As `evaluate(_:level:holder:)`, but keeps no table: the result has no `ref`. For what
    /// is read and dropped (a breakpoint's condition, a log point's `{expression}`), so that a
    /// stop hit many times keeps nothing.
    package func evaluate(_ expression: String, level: Int) throws -> LuaVariable {
        try evaluated(expression, holder: nil) { mf_evaluate_unkept(L, Int32(level), $0, $1) }
    }

    /// Empties `holder`: the tables listings and evaluations kept in it are no longer kept
    /// by it (each `ref` given so far is gone), and refs start from 1 again. On the stopped
    /// thread, or any time on the state's thread.
    /// - Throws: `LuaError` when `holder` is not a table of this state.
    package func releaseShown(holder: LuaRef) throws {
        let stack = StackGuard(L)
        _ = stack
        guard mf_checkstack(L, 1) != 0 else { throw LuaError.memory(limit: nil) }
        mf_rawgeti_registry(L, lua_Integer(try holder.index(in: state)))
        try checkRead(mf_release_shown(L, -1))
    }

    private func evaluated(
        _ expression: String, holder: LuaRef?,
        _ evaluate: (UnsafePointer<CChar>?, Int) -> Int32
    ) throws -> LuaVariable {
        let bytes = Array(expression.utf8)
        let listed = try bytes.withUnsafeBufferPointer { buffer in
            try listing(holder: holder) {
                buffer.withMemoryRebound(to: CChar.self) { evaluate($0.baseAddress, $0.count) }
            }
        }
        return listed.first ?? LuaVariable(name: expression, text: "nil", type: "nil", ref: nil)
    }

    /// Runs `list` with `holder` on top (none pushed when nil) and reads the list it pushed.
    private func listing(holder: LuaRef?, _ list: () -> Int32) throws -> [LuaVariable] {
        let stack = StackGuard(L)
        _ = stack
        guard mf_checkstack(L, 1) != 0 else { throw LuaError.memory(limit: nil) }
        if let holder { mf_rawgeti_registry(L, lua_Integer(try holder.index(in: state))) }
        try checkRead(list())
        let entries = try state.read(L, -1, path: "variables")
        guard case .table(let table) = entries else { return [] }
        return table.array.map { entry in
            LuaVariable(
                name: entry["name"]?.stringValue ?? "?", text: entry["text"]?.stringValue ?? "?",
                type: entry["type"]?.stringValue ?? "?", ref: entry["ref"]?.intValue.map(Int.init))
        }
    }

    /// A read's failure as a thrown error, with the time limit's flag left as it was: a
    /// feature stopped at its own time limit's error still fails with it when it goes on, and
    /// a failed look there is not a timeout.
    private func checkRead(_ status: Int32) throws {
        guard status != LUA_OK else { return }
        let timedOut = mf_budget_take_timeout(state.budget)
        defer { if timedOut != 0 { mf_budget_restore_timeout(state.budget, timedOut) } }
        try state.check(status, L)
    }
}

/// Which variables of a frame to list.
package enum LuaVariableKind: Sendable {
    case locals, upvalues
    var code: Int32 { Int32(UInt8(ascii: self == .locals ? "l" : "u")) }
}
