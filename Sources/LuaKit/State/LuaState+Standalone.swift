import CLua
import CLuaShim

extension LuaState {
    // MARK: - Main chunks, as the standalone interpreter runs them

    /// Where a main chunk comes from, for `runAsMain`.
    package enum MainChunk: Sendable {
        /// A file loaded by Lua's own rules (a first `#` line and a UTF-8 BOM skipped).
        case file(String)
        /// Standard input, named `stdin` in messages (`lua5.4 -`).
        case standardInput
        /// Source text (text only, never a binary chunk), named `name` in messages
        /// (`=LUA_INIT`, `=(command line)` for `lua5.4 -e`).
        case string(String, name: String)
    }

    /// What a main chunk is called with.
    package enum MainArguments: Sendable {
        /// These strings, as `...`.
        case strings([String])
        /// The items 1...#arg of the global `arg` table as it is when the chunk
        /// starts, as lua5.4 passes them to its script (an error when `arg` is not a table).
        case argTable
    }

    /// Loads and runs a main chunk as `lua5.4` does: loaded by Lua's rules
    /// (binary chunks only under the trusted profile), called from a C frame
    /// with lua.c's message handler, under the time budget.
    ///
    ///     if let message = lua.runAsMain(.file("hello.lua"), arguments: ["a"]) {
    ///         FileHandle.standardError.write(Data("moonflow: \(message)\n".utf8))
    ///     }
    ///
    /// - Returns: nil on success; otherwise the message lua5.4 would print
    ///   after `lua5.4: ` (a syntax error, or the error with its traceback).
    package func runAsMain(_ chunk: MainChunk, arguments: [String] = []) -> String? {
        runAsMain(chunk, with: .strings(arguments))
    }

    /// `runAsMain`, its arguments given as `MainArguments`.
    package func runAsMain(_ chunk: MainChunk, with arguments: MainArguments) -> String? {
        enter(); defer { leave() }
        let L = activeL
        let stack = StackGuard(L)
        _ = stack
        let strings: [String]
        if case .strings(let list) = arguments { strings = list } else { strings = [] }
        guard mf_checkstack(L, Int32(strings.count) + 8) != 0 else { return "not enough memory" }
        let fileMode = profile == .trusted ? "bt" : "t"
        var status: Int32
        switch chunk {
        case .file(let path): status = mf_loadfile(L, path, fileMode)
        case .standardInput: status = mf_loadfile(L, nil, fileMode)
        case .string(let source, let name):
            let bytes = Array(source.utf8)
            status = bytes.withUnsafeBufferPointer { buf in
                buf.withMemoryRebound(to: CChar.self) { mf_load(L, $0.baseAddress, $0.count, "=" + name, "t") }
            }
        }
        if status == LUA_OK {
            var count: Int32 = 0
            switch arguments {
            case .strings:
                do { try push(strings.map { .value(.string(LuaString($0))) }, on: L) } catch { return "\(error)" }
                count = Int32(strings.count)
            case .argTable:
                status = mf_pushargs(L, &count)
            }
            if status == LUA_OK { status = mf_docall(L, count, timeLimitMs ?? 0) }
        }
        return mainMessage(L, status)
    }

    /// `lua5.4 -l global=module`: sets `global` to `require(module)`, the call made
    /// as `runAsMain` makes it.
    /// - Returns: nil on success; otherwise the message lua5.4 would print.
    package func requireAsMain(_ module: String, into global: String) -> String? {
        enter(); defer { leave() }
        let L = activeL
        let stack = StackGuard(L)
        _ = stack
        return mainMessage(L, mf_dolibrary(L, global, module, timeLimitMs ?? 0))
    }

    /// `lua5.4 -W`: turns warnings on, as `warn("@on")` does.
    package func turnWarningsOn() {
        enter(); defer { leave() }
        mf_warnings_on(activeL)
    }

    /// `lua5.4 -i`: reads, runs and prints lines from standard input until it ends,
    /// as lua5.4's interactive mode does (prompts `_PROMPT` and `_PROMPT2`; errors on
    /// standard error). With `echo`, each line read is printed after its prompt, as
    /// lua5.4 does when standard input is not a terminal.
    /// - Returns: nil, or the message of an error outside the lines' own calls.
    package func readEvalPrintLoop(echo: Bool) -> String? {
        enter(); defer { leave() }
        let L = activeL
        let stack = StackGuard(L)
        _ = stack
        return mainMessage(L, mf_repl(L, timeLimitMs ?? 0, echo ? 1 : 0))
    }

    /// The line `lua5.4 -v` prints (`Lua 5.4.4  Copyright (C) 1994-2022 Lua.org, PUC-Rio`),
    /// printed on standard output through C's own buffer, as Lua's `print` writes.
    package static func printVersion() { mf_print_version() }

    /// From now on in this process, Ctrl-C (SIGINT) while `runAsMain`, `requireAsMain` or
    /// a line of `readEvalPrintLoop` runs raises the catchable error `interrupted!` there,
    /// and a second one ends the process, as in lua5.4 (also where SIGINT was ignored, a
    /// script started in the background). For a process that runs lua5.4's command line:
    /// the handler replaces the process's own.
    package static func catchInterruptsAsLuaDoes() { mf_catch_interrupts() }

    /// nil for `LUA_OK`; otherwise the message on top of the stack, as lua5.4 prints it.
    private func mainMessage(_ L: OpaquePointer, _ status: Int32) -> String? {
        guard status != LUA_OK else { return nil }
        if status == LUA_ERRMEM || status == MF_NOROOM { return "not enough memory" }
        _ = mf_budget_take_timeout(budget)  // the message says what stopped it
        if mf_type(L, -1) == LUA_TSTRING {
            var len = 0
            let p = mf_tostring_raw(L, -1, &len)!
            return String(decoding: UnsafeRawBufferPointer(start: p, count: len), as: UTF8.self)
        }
        return "(error object is a \(String(cString: lua_typename(L, mf_type(L, -1)))) value)"
    }
}
