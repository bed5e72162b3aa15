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
    public func load(string source: String, name: String, mode: ChunkMode = .text) throws -> LuaRef {
        try load(bytes: Array(source.utf8), chunkName: "=" + name, displayName: name, mode: mode)
    }

    /// Compiles a file as a function; messages say `path:line:`.
    public func load(file path: String, mode: ChunkMode = .text) throws -> LuaRef {
        guard let handle = FileHandle(forReadingAtPath: path), let data = try? handle.readToEnd() ?? Data() else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "does not exist"
            throw LuaError.runtime(message: "cannot open \(path): the file \(reason)", location: nil, traceback: "")
        }
        return try load(bytes: Array(data), chunkName: "@" + path, displayName: path, mode: mode)
    }

    func load(bytes: [UInt8], chunkName: String, displayName: String, mode: ChunkMode) throws -> LuaRef {
        enter(); defer { leave() }
        let L = activeL
        let status = bytes.withUnsafeBufferPointer { buf in
            buf.baseAddress!.withMemoryRebound(to: CChar.self, capacity: max(buf.count, 1)) {
                mf_load(L, $0, buf.count, chunkName, mode.rawValue)
            }
        }
        try check(status, L, chunk: displayName)
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
    public func call<R>(_ function: LuaRef, _ args: [LuaPush], _ body: (LuaSlots) throws -> R) throws -> R {
        enter(); defer { leave() }
        let L = activeL
        let top = mf_gettop(L)
        defer { mf_settop(L, top) }
        guard mf_checkstack(L, Int32(args.count) + 8) != 0 else { throw LuaError.memory(limit: memoryLimit) }
        mf_rawgeti_registry(L, lua_Integer(function.ref))
        do { try push(args, on: L) } catch { mf_settop(L, top); throw error }
        let status = mf_pcall(L, Int32(args.count), LUA_MULTRET, timeLimitMs ?? 0)
        try check(status, L)
        return try body(LuaSlots(state: self, L: L, base: top, count: Int(mf_gettop(L) - top)))
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
    public func makeClass(_ name: String, methods: [String: LuaFunction]) throws -> LuaClass {
        enter(); defer { leave() }
        let L = activeL
        let top = mf_gettop(L)
        try push(.table(LuaTable()), on: L)
        for (method, fn) in methods.sorted(by: { $0.key < $1.key }) {
            do {
                try push([.value(.string(LuaString(method))), .function(fn)], on: L)
                try check(mf_rawset(L, top + 1), L)
            } catch { mf_settop(L, top); throw error }
        }
        var ref: Int32 = 0
        let status = name.withCString { mf_new_object_metatable(L, $0, &ref) }
        if status != LUA_OK { let e = popError(status, L); mf_settop(L, top); throw e }
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
