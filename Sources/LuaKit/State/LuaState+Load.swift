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
    public func load(string source: String, name: String, mode: ChunkMode = .text, env: LuaRef? = nil) throws -> LuaRef
    {
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

    func load(
        bytes: [UInt8], chunkName: String, displayName: String, mode: ChunkMode, env: LuaRef? = nil
    ) throws -> LuaRef {
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
}
