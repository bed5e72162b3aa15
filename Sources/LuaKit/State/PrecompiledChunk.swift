import CLua
import CLuaShim
import Foundation

/// A chunk of the host's own Lua shipped twice: as text, and compiled by the Lua the
/// project builds against. Loading the bytecode skips Lua's compiler, most of what
/// making a state costs (dispatch.lua, 16.7 KB of text, compiles in ~2.6 million
/// instructions; its bytecode loads in a tenth of that).
///
/// The compiled form is a header and `lua_dump`'s output (debug information kept, so
/// messages and tracebacks name the same `name:line` as the text's):
///
///     "MFLC"  Lua release (UInt32, little-endian: 50404 for 5.4.4)
///             FNV-1a 64 of the text's bytes (UInt64, little-endian)   bytecode
///
/// It is used only when both match the running Lua and the text beside it; otherwise
/// (another Lua release, a text edited since) the text is compiled, as any chunk is.
/// `scripts/precompile-lua` writes the compiled forms; a test fails while one is stale.
package struct PrecompiledChunk: Sendable {
    package let source: [UInt8]
    package let compiled: [UInt8]
    /// The chunk's name in messages (`name:line:`), as `load(string:name:)` takes it.
    package let name: String
    /// The bytecode, when the header says it was made from `source` by this Lua release:
    /// checked once here (hashing the text), not at each state's load.
    let usableBytecode: [UInt8]?

    package init(source: [UInt8], compiled: [UInt8], name: String) {
        self.source = source
        self.compiled = compiled
        self.name = name
        let current =
            compiled.count > Self.headerSize && compiled.prefix(Self.headerSize).elementsEqual(Self.header(for: source))
        usableBytecode = current ? Array(compiled.dropFirst(Self.headerSize)) : nil
    }

    static let magic = Array("MFLC".utf8)
    static let headerSize = 16

    /// The header for `source` under the Lua these shims were built against.
    static func header(for source: [UInt8]) -> [UInt8] {
        let release = UInt32(mf_lua_release())
        let hash = fnv1a64(source)
        return magic + withUnsafeBytes(of: release.littleEndian, Array.init)
            + withUnsafeBytes(of: hash.littleEndian, Array.init)
    }

    static func fnv1a64(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return hash
    }
}

extension LuaState {
    /// Loads a host chunk from its bytecode when that is current (mode "b", asked for
    /// explicitly: the bytes are the project's own, checked against the text), else
    /// compiles its text (mode "t").
    /// - Throws: `LuaError.syntax` from the text, or `.memory`.
    package func load(_ chunk: PrecompiledChunk, env: LuaRef? = nil) throws -> LuaRef {
        if let bytecode = chunk.usableBytecode,
            let loaded = try? load(
                bytes: bytecode, chunkName: "=" + chunk.name, displayName: chunk.name, mode: .binary, env: env)
        {
            return loaded
        }
        return try load(
            bytes: chunk.source, chunkName: "=" + chunk.name, displayName: chunk.name, mode: .text, env: env)
    }

    /// The compiled form of `source` (header and bytecode) that `load(_:)` accepts for it:
    /// what `scripts/precompile-lua` writes, and what the test that keeps them current
    /// compares with the shipped bytes.
    /// - Throws: `LuaError.syntax` when `source` does not compile.
    package func precompile(source: [UInt8], name: String) throws -> [UInt8] {
        let function = try load(bytes: source, chunkName: "=" + name, displayName: name, mode: .text)
        enter(); defer { leave() }
        let L = activeL
        mf_rawgeti_registry(L, lua_Integer(function.ref))
        defer { mf_pop(L, 1) }
        var bytes: UnsafeMutablePointer<UInt8>?
        var length = 0
        guard mf_dump(L, &bytes, &length) == 0, let bytes else {
            throw LuaError.memory(limit: nil)
        }
        defer { free(bytes) }
        return PrecompiledChunk.header(for: source) + Array(UnsafeBufferPointer(start: bytes, count: length))
    }
}
