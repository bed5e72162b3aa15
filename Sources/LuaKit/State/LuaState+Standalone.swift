import CLua
import CLuaShim
import Foundation

extension LuaState {
    // MARK: - Loading ([manual §4.6 luaL_loadbufferx](https://www.lua.org/manual/5.4/manual.html#luaL_loadbufferx))

    /// How chunks may be loaded. Text only unless binary is asked for explicitly:
    /// corrupted bytecode can crash Lua 5.4.
    public enum ChunkMode: String, Sendable { case text = "t", binary = "b", any = "bt" }

    /// Compiles `source` as a function, naming it `name` in messages.
    ///
    /// - Parameters:
    ///   - name: shown in errors as `name:line:`.
    /// - Throws: `LuaError.syntax` with the line, or `.memory`.
    /// - Parameter env: the table the chunk sees as its globals (`_ENV`); nil for the state's globals.
    public func load(string source: String, name: String, mode: ChunkMode = .text, env: LuaRef? = nil) throws -> LuaRef {
        try load(bytes: Array(source.utf8), chunkName: "=" + name, displayName: name, mode: mode, env: env)
    }

    /// Compiles a file as a function; messages say `path:line:`.
    ///
    /// - Parameter env: the table the chunk sees as its globals (`_ENV`); nil for the state's globals.
    public func load(file path: String, mode: ChunkMode = .text, env: LuaRef? = nil) throws -> LuaRef {
        guard let handle = FileHandle(forReadingAtPath: path), let data = try? handle.readToEnd() ?? Data() else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "does not exist"
            throw LuaError.runtime(message: "cannot open \(path): the file \(reason)", location: nil, traceback: "")
        }
        return try load(bytes: Array(data), chunkName: "@" + path, displayName: path, mode: mode, env: env)
    }

    func load(bytes: [UInt8], chunkName: String, displayName: String, mode: ChunkMode, env: LuaRef? = nil) throws -> LuaRef {
        enter(); defer { leave() }
        let L = activeL
        let status = bytes.withUnsafeBufferPointer { buf in
            buf.baseAddress!.withMemoryRebound(to: CChar.self, capacity: max(buf.count, 1)) {
                mf_load(L, $0, buf.count, chunkName, mode.rawValue)
            }
        }
        try check(status, L, chunk: displayName)
        if let env {
            // A main chunk's first upvalue is its _ENV (manual §3.3.2); setting it cannot raise.
            mf_rawgeti_registry(L, lua_Integer(env.ref))
            if lua_setupvalue(L, -2, 1) == nil { mf_pop(L, 1) }
        }
        return try popRef(L)
    }

    // MARK: - Calling ([manual §4.6 lua_pcall](https://www.lua.org/manual/5.4/manual.html#lua_pcall))

    /// Calls `function` with `args` under protection and the time budget and
    /// returns its results copied into Swift.
    ///
    /// - Throws: `LuaError.runtime` (message, `file:line`, traceback),
    ///   `.timeout`, `.memory`, or `.conversion` if a result cannot be copied.
    @discardableResult
    public func call(_ function: LuaRef, _ args: [LuaPush] = []) throws -> [LuaValue] {
        try call(function, args) { try $0.values() }
    }

    /// Calls `function` and hands its results to `body` while they are still on
    /// the stack (to take refs to functions or userdata among them).
    @inlinable
    public func call<R>(_ function: LuaRef, _ args: [LuaPush], _ body: (LuaSlots) throws -> R) throws -> R {
        // Generic only here, inlined into the caller: the call itself is not generic, so
        // no type metadata is looked up per call.
        var result: R?
        try call(function, args, reading: { result = try body($0) })
        return result.take()!  // moved out, not copied and then released
    }

    /// Calls `function` and hands its results to `body` while they are on the stack.
    public func call(_ function: LuaRef, _ args: [LuaPush], reading body: (LuaSlots) throws -> Void) throws {
        try call(function, args, limitMs: timeLimitMs ?? 0, reading: body)
    }

    /// Calls `function` without arming the time budget: calls that reach Lua
    /// again from inside it (through Swift functions) each get the whole budget.
    /// For a driver that runs long on purpose, such as the spec runner running
    /// every test of a file while each handler and reducer stays bounded.
    package func callWithoutTimeLimit(_ function: LuaRef, _ args: [LuaPush], reading body: (LuaSlots) throws -> Void) throws {
        try call(function, args, limitMs: 0, reading: body)
    }

    private func call(_ function: LuaRef, _ args: [LuaPush], limitMs: Int64, reading body: (LuaSlots) throws -> Void) throws {
        enter(); defer { leave() }
        let L = activeL
        // The results stay on the stack while `body` reads them; the guard drops them after.
        let stack = StackGuard(L)
        guard mf_checkstack(L, Int32(args.count) + 8) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        mf_rawgeti_registry(L, lua_Integer(function.ref))
        try push(args, on: L)
        let status = mf_pcall(L, Int32(args.count), LUA_MULTRET, limitMs)
        try check(status, L)
        try body(LuaSlots(state: self, L: L, base: stack.top, count: Int(mf_gettop(L) - stack.top)))
    }

    /// What a kind of view stands for, when the reader copies one out.
    package enum ViewKind: Sendable { case readOnly, write }

    /// Makes tables whose metatable is `metatable` views: reading one copies the
    /// table `targets[view]` shows (a weak-keyed table from view to table).
    package func registerViews(_ kind: ViewKind, metatable: LuaRef, targets: LuaRef) throws {
        enter(); defer { leave() }
        let L = activeL
        guard mf_checkstack(L, 2) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        mf_rawgeti_registry(L, lua_Integer(metatable.ref))
        mf_rawgeti_registry(L, lua_Integer(targets.ref))
        let registered = kind == .readOnly ? mf_register_readonly(L) : mf_register_write_views(L)
        guard registered != 0 else { mf_pop(L, 2); throw LuaError.memory(limit: memoryLimit) }
    }

    /// Registers `refuse(name, view, key)`, which rawget, rawset and rawlen call on a view
    /// of either kind (`registerViews`) instead of acting on it: it raises, naming the field.
    /// The state's raw functions are C ones that check every table they get, so a copy of
    /// them taken before any view existed (the sandbox's) refuses views too.
    package func registerViewRefuser(_ refuse: LuaRef) throws {
        try register(refuse) { mf_register_view_refuser($0) }
    }

    /// Registers `callout`, a function Lua calls (with no arguments, its errors dropped)
    /// before it next calls out into code that may block, once `wantCallout()` asked for it:
    /// a Swift function, os.execute, the io library's functions and file methods.
    package func registerCallout(_ callout: LuaRef) throws {
        try register(callout) { mf_register_callout($0) }
    }

    /// Asks for the registered callout before Lua next calls out into code that may block.
    /// On the thread using the state.
    package func wantCallout() { mf_want_callout(activeL) }

    /// Pushes the function `ref` holds and hands it to a C registrar, which takes it off the stack.
    private func register(_ ref: LuaRef, with registrar: (OpaquePointer) -> Int32) throws {
        enter(); defer { leave() }
        let L = activeL
        guard mf_checkstack(L, 1) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        mf_rawgeti_registry(L, lua_Integer(ref.ref))
        _ = registrar(L)
    }

    /// getmetatable(v) and setmetatable(t, mt) that a metatable's `__metatable` does not
    /// stop, for the host's own Lua code: the shared array marker is kept from scripts so.
    /// Never hand them to a script.
    package func rawMetatableFunctions() throws -> (get: LuaRef, set: LuaRef) {
        enter(); defer { leave() }
        let L = activeL
        guard mf_checkstack(L, 2) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        mf_push_raw_metatable_functions(L)
        let set: LuaRef
        do { set = try popRef(L) } catch { mf_pop(L, 1); throw error }
        return (try popRef(L), set)
    }

    /// `rearm()` (a C function): the call running under `call`'s time limit gets its whole
    /// limit again from now, unless its deadline passed already. For the host's own Lua code
    /// that runs two of a feature's calls in one protected call, so each keeps its own limit.
    /// Never hand it to a script (a script could then run on past its limit).
    package func rearmFunction() throws -> LuaRef { try lightFunctionRef(mf_push_rearm) }

    /// `params(f)` (a C function): the named parameters of the Lua function `f` and whether
    /// it takes `...` (`mf_push_params`).
    package func paramsFunction() throws -> LuaRef { try lightFunctionRef(mf_push_params) }

    /// `fits(shape, k, v)` (a C function): whether a reducer's write of `v` at `k`, in a table
    /// whose view shape is `shape`, may wait in Lua until the state is read (`mf_push_fits`).
    package func fitsFunction() throws -> LuaRef { try lightFunctionRef(mf_push_fits) }

    /// A registry reference to the light C function `push` pushes (one that pushing
    /// cannot make raise: no closure, no allocation).
    func lightFunctionRef(_ push: (OpaquePointer?) -> Void) throws -> LuaRef {
        enter(); defer { leave() }
        let L = activeL
        guard mf_checkstack(L, 1) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        push(L)
        return try popRef(L)
    }

    /// `flat(shapes, m)` (a C function): `FlatShapes.matches` for the host's own Lua code,
    /// `shapes` being a `FlatShapes.luaTable`.
    package func flatCheckFunction() throws -> LuaRef {
        enter(); defer { leave() }
        let L = activeL
        guard mf_checkstack(L, 2) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        try check(mf_push_flat_check(L), L)
        return try popRef(L)
    }

    /// Makes the write views' reads and writes C functions (`mf_install_write_view_access`):
    /// `metatable.__index` reads raw through `targets[view]` (a table value through
    /// `wrap(table, view, key)`), `metatable.__newindex` writes raw and appends
    /// (view, key, old) to `log` and, for a table, (table, view, key) to `stored`, each
    /// list counting its entries at [0].
    /// A string key read as nil, or written where there is nothing yet, is first shown to
    /// `check(view, key, writing)` (strict access to a declared state).
    package func installWriteViewAccess(metatable: LuaRef, targets: LuaRef, log: LuaRef, stored: LuaRef, wrap: LuaRef, check checker: LuaRef) throws {
        enter(); defer { leave() }
        let L = activeL
        guard mf_checkstack(L, 9) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        for ref in [metatable, targets, log, stored, wrap, checker] { mf_rawgeti_registry(L, lua_Integer(ref.ref)) }
        try check(mf_install_write_view_access(L), L)
    }

    /// Gives `metatable` the `__close` that counts `count[1]` down (read-only views'
    /// validity, see `LuaDispatch`): a C closer the time limit's stop lets run.
    package func installViewClose(metatable: LuaRef, count: LuaRef) throws {
        enter(); defer { leave() }
        let L = activeL
        guard mf_checkstack(L, 4) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        for ref in [metatable, count] { mf_rawgeti_registry(L, lua_Integer(ref.ref)) }
        try check(mf_install_view_close(L), L)
    }

    /// Loads and runs a string; returns its results.
    @discardableResult
    public func run(string source: String, name: String) throws -> [LuaValue] {
        try call(try load(string: source, name: name))
    }

    /// Loads and runs a file with `args` as its `...`.
    @discardableResult
    public func run(file path: String, args: [LuaValue] = []) throws -> [LuaValue] {
        try call(try load(file: path), args.map { .value($0) })
    }

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

    // MARK: - Globals and modules

    /// Sets global `name` (runs `_ENV` metamethods, protected).
    public func setGlobal(_ name: String, _ value: LuaPush) throws {
        enter(); defer { leave() }
        let L = activeL
        try push([value], on: L)
        try check(mf_setglobal(L, name), L)
    }

    /// Reads global `name`, copied into Swift.
    public func global(_ name: String) throws -> LuaValue {
        enter(); defer { leave() }
        let L = activeL
        try check(mf_getglobal(L, name), L)
        defer { mf_pop(L, 1) }
        return try read(L, -1, path: name)
    }

    /// A reference to global `name` (a function, a table...).
    public func ref(global name: String) throws -> LuaRef {
        enter(); defer { leave() }
        let L = activeL
        try check(mf_getglobal(L, name), L)
        return try popRef(L)
    }

    /// Copies `value` into Lua and returns a reference to it.
    public func ref(_ value: LuaPush) throws -> LuaRef {
        enter(); defer { leave() }
        let L = activeL
        try push([value], on: L)
        return try popRef(L)
    }

    /// Reads the value a reference holds, copied into Swift.
    public func value(of ref: LuaRef, path: String = "value") throws -> LuaValue {
        enter(); defer { leave() }
        let L = activeL
        mf_rawgeti_registry(L, lua_Integer(ref.ref))
        defer { mf_pop(L, 1) }
        return try read(L, -1, path: path)
    }

    /// Makes `require(name)` call `open` (package.preload), like a C module's `luaopen_`.
    public func preload(_ name: String, _ open: @escaping LuaFunction) throws {
        enter(); defer { leave() }
        let L = activeL
        try push([.function(open)], on: L)
        try check(mf_preload(L, name), L)
    }

    /// Registers a class of Swift objects that Lua sees as userdata with `methods`.
    /// - Parameters:
    ///   - methods: Swift methods by name.
    ///   - luaMethods: methods written in Lua (functions already in the state).
    public func makeClass(_ name: String, methods: [String: LuaFunction], luaMethods: [String: LuaRef] = [:]) throws -> LuaClass {
        enter(); defer { leave() }
        let L = activeL
        let stack = StackGuard(L)   // back at its top on success too: the metatable call takes the table
        try push(.table(LuaTable()), on: L)
        let entries = methods.map { ($0.key, LuaPush.function($0.value)) } + luaMethods.map { ($0.key, LuaPush.ref($0.value)) }
        for (method, fn) in entries.sorted(by: { $0.0 < $1.0 }) {
            try push([.value(.string(LuaString(method))), fn], on: L)
            try check(mf_rawset(L, stack.top + 1), L)
        }
        var ref: Int32 = 0
        try check(name.withCString { mf_new_object_metatable(L, $0, &ref) }, L)
        return LuaClass(name: name, ref: ref, state: self)
    }

    /// Pops the top value into a registry reference.
    func popRef(_ L: OpaquePointer) throws -> LuaRef {
        let type = mf_type(L, -1)
        var r: Int32 = 0
        try check(mf_ref(L, &r), L)
        return LuaRef(ref: r, type: type, state: self)
    }
}

extension LuaState {
    /// Creates a table with `fields` (values may be functions or refs) and returns a reference to it.
    ///
    ///     let env = try lua.makeTable(["services": .ref(services), "log": .function { _ in [] }])
    public func makeTable(_ fields: [(String, LuaPush)]) throws -> LuaRef {
        enter(); defer { leave() }
        let L = activeL
        let stack = StackGuard(L)   // back at its top on success too: popRef takes the table
        try push(.table(LuaTable()), on: L)
        for (key, value) in fields {
            try push([.value(.string(LuaString(key))), value], on: L)
            try check(mf_rawset(L, stack.top + 1), L)
        }
        return try popRef(L)
    }

    /// `table[key] = value` without metamethods.
    package func rawSet(_ table: LuaRef, _ key: LuaValue, _ value: LuaPush) throws {
        enter(); defer { leave() }
        let L = activeL
        let stack = StackGuard(L)
        mf_rawgeti_registry(L, lua_Integer(table.ref))
        try push([.value(key), value], on: L)
        try check(mf_rawset(L, stack.top + 1), L)
    }

    /// `table[key]` without metamethods, handed to `body` on the stack (slot 1).
    package func rawGet<R>(_ table: LuaRef, _ key: String, _ body: (LuaSlots) throws -> R) throws -> R {
        enter(); defer { leave() }
        let L = activeL
        let stack = StackGuard(L)
        mf_rawgeti_registry(L, lua_Integer(table.ref))
        try check(mf_rawgetfield(L, stack.top + 1, key), L)
        return try body(LuaSlots(state: self, L: L, base: stack.top + 1, count: 1))
    }

    /// The integer at `table[index]` (0 when it holds none), and `table[index] = newValue`
    /// when one is given: raw, for a small table of counters shared with Lua code (the
    /// slot exists already, so nothing allocates and nothing raises).
    package func exchangeCounter(_ table: LuaRef, at index: Int, with newValue: Int? = nil) -> Int {
        enter(); defer { leave() }
        let L = activeL
        guard mf_checkstack(L, 2) != 0 else { return 0 }
        mf_rawgeti_registry(L, lua_Integer(table.ref))
        mf_rawgeti(L, -1, lua_Integer(index))
        let old = Int(lua_tointegerx(L, -1, nil))
        mf_pop(L, 1)
        if let newValue {
            lua_pushinteger(L, lua_Integer(newValue))
            lua_rawseti(L, -2, lua_Integer(index))
        }
        mf_pop(L, 1)
        return old
    }

    /// Replaces the value a reference holds (the registry slot now holds `value`).
    package func replace(_ ref: LuaRef, with value: LuaValue) throws {
        enter(); defer { leave() }
        let L = activeL
        try push(value, on: L)
        mf_pushvalue(L, -1)
        lua_rawseti(L, mf_registryindex(), lua_Integer(ref.ref))  // the slot exists: no allocation
        mf_pop(L, 1)
    }
}

extension LuaSlots {
    /// Puts the value at `i` into the registry slot `ref` holds (the slot exists: nothing
    /// allocates, nothing raises). Returns false when there is no value at `i`.
    package func store(_ i: Int, into ref: LuaRef) -> Bool {
        guard i >= 1 && i <= count, mf_checkstack(L, 1) != 0 else { return false }
        mf_pushvalue(L, base + Int32(i))
        lua_rawseti(L, mf_registryindex(), lua_Integer(ref.ref))
        return true
    }

    /// `slots[i][key] = value` without metamethods (the value at `i` must be a table).
    package func rawSet(_ i: Int, _ key: String, _ value: LuaValue) throws {
        let stack = StackGuard(L)
        _ = stack
        try state.push([.value(.string(LuaString(key))), .value(value)], on: L)
        let status = mf_rawset(L, base + Int32(i))
        if status != LUA_OK { throw state.popError(status, L) }
    }

    /// `slots[i][key]` read raw (nil if the value at `i` is not a table), handed to `body` as slot 1.
    package func field<R>(_ i: Int, _ key: String, _ body: (LuaSlots) throws -> R) throws -> R {
        let stack = StackGuard(L)
        if mf_type(L, base + Int32(i)) != LUA_TTABLE { lua_pushnil(L) }
        else {
            let status = mf_rawgetfield(L, base + Int32(i), key)
            if status != LUA_OK { throw state.popError(status, L) }
        }
        return try body(LuaSlots(state: state, L: L, base: stack.top, count: 1))
    }
}

extension LuaSlots {
    /// How many keys of the table at `i` are not strings (raw, no metamethods; 0 for a value
    /// that is not a table): a table of named fields holds none.
    package func nonStringKeyCount(_ i: Int) -> Int {
        let idx = base + Int32(i)
        guard mf_type(L, idx) == LUA_TTABLE, mf_checkstack(L, 2) != 0 else { return 0 }
        let stack = StackGuard(L)
        _ = stack
        var count = 0
        lua_pushnil(L)
        while mf_next(L, idx) != 0 {
            if mf_type(L, -2) != LUA_TSTRING { count += 1 }
            mf_pop(L, 1)
        }
        return count
    }

    /// Calls `body(key, typeName)` for every string key of the table at `i` (raw, no metamethods).
    package func forEachField(_ i: Int, _ body: (String, String) throws -> Void) throws {
        let idx = base + Int32(i)
        guard mf_type(L, idx) == LUA_TTABLE else { return }
        let stack = StackGuard(L)   // drops the key and value left when `body` throws
        _ = stack
        lua_pushnil(L)
        while mf_next(L, idx) != 0 {
            if mf_type(L, -2) == LUA_TSTRING {
                var len = 0
                let p = mf_tostring_raw(L, -2, &len)!
                let key = String(decoding: UnsafeRawBufferPointer(start: p, count: len), as: UTF8.self)
                let typeName = String(cString: lua_typename(L, mf_type(L, -1)))
                try body(key, typeName)
            }
            mf_pop(L, 1)
        }
    }
}
