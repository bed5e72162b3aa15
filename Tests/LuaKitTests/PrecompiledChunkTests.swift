import LuaKit
import XCTest

/// A host chunk's bytecode is used only while it is what its text compiles to under this
/// Lua; otherwise the text is compiled, so an edited chunk never runs stale code.
final class PrecompiledChunkTests: XCTestCase {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// The header `precompile` writes for `text`, over the bytecode of `other`: a blob
    /// whose use shows in what the loaded function returns.
    private func blob(headerOf text: String, bytecodeOf other: String, in lua: LuaState) throws -> [UInt8] {
        let header = try lua.precompile(source: bytes(text), name: "chunk").prefix(16)
        return Array(header) + (try lua.precompile(source: bytes(other), name: "chunk").dropFirst(16))
    }

    private func result(of chunk: PrecompiledChunk, in lua: LuaState) throws -> LuaValue? {
        try lua.call(try lua.load(chunk)).first
    }

    func testCurrentBytecodeIsLoadedInsteadOfTheText() throws {
        let lua = try LuaState()
        let compiled = try blob(headerOf: "return 1", bytecodeOf: "return 2", in: lua)
        XCTAssertEqual(
            try result(of: PrecompiledChunk(source: bytes("return 1"), compiled: compiled, name: "chunk"), in: lua),
            .integer(2))
    }

    func testAnEditedTextIsCompiledAndItsOldBytecodeIgnored() throws {
        let lua = try LuaState()
        let compiled = try blob(headerOf: "return 1", bytecodeOf: "return 2", in: lua)
        XCTAssertEqual(
            try result(of: PrecompiledChunk(source: bytes("return 3"), compiled: compiled, name: "chunk"), in: lua),
            .integer(3))
    }

    func testBytecodeOfAnotherLuaReleaseOrNoneAtAllFallsBackToTheText() throws {
        let lua = try LuaState()
        var otherRelease = try blob(headerOf: "return 1", bytecodeOf: "return 2", in: lua)
        otherRelease[4] &+= 1
        XCTAssertEqual(
            try result(of: PrecompiledChunk(source: bytes("return 1"), compiled: otherRelease, name: "chunk"), in: lua),
            .integer(1))
        XCTAssertEqual(
            try result(of: PrecompiledChunk(source: bytes("return 1"), compiled: [], name: "chunk"), in: lua),
            .integer(1))
        // A header with nothing after it, or a cut-off dump: the text, not a failure.
        let whole = try lua.precompile(source: bytes("return 1"), name: "chunk")
        XCTAssertEqual(
            try result(
                of: PrecompiledChunk(source: bytes("return 1"), compiled: Array(whole.prefix(16)), name: "chunk"),
                in: lua), .integer(1))
        XCTAssertEqual(
            try result(
                of: PrecompiledChunk(source: bytes("return 1"), compiled: Array(whole.dropLast(3)), name: "chunk"),
                in: lua), .integer(1))
    }

    func testErrorsFromBytecodeNameTheSameLinesAsFromText() throws {
        let lua = try LuaState()
        let text = "local x = 1\n\nerror('boom')\n"
        let chunk = PrecompiledChunk(
            source: bytes(text), compiled: try lua.precompile(source: bytes(text), name: "host.part"), name: "host.part"
        )
        XCTAssertThrowsError(try lua.call(try lua.load(chunk))) { error in
            guard case .runtime(let message, let location, _) = error as? LuaError else { return XCTFail("\(error)") }
            XCTAssertEqual(message, "host.part:3: boom")
            XCTAssertEqual(location, "host.part:3")
        }
    }

    func testATextThatDoesNotCompileIsASyntaxErrorNotABlob() throws {
        let lua = try LuaState()
        XCTAssertThrowsError(try lua.precompile(source: bytes("return = 1"), name: "bad")) { error in
            guard case .syntax(let file, let line, _) = error as? LuaError else { return XCTFail("\(error)") }
            XCTAssertEqual(file, "bad")
            XCTAssertEqual(line, 1)
        }
    }
}
