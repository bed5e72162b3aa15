import LuaKit
import XCTest

final class LuaErrorTests: XCTestCase {
    func testRuntimeErrorCarriesFileLineAndTraceback() throws {
        let lua = try LuaState()
        let chunk = try lua.load(string: "local x = 1\nlocal function f() error('boom') end\nf()", name: "demo.lua")
        XCTAssertThrowsError(try lua.call(chunk)) { error in
            guard case .runtime(let message, let location, let traceback) = error as? LuaError else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(message, "demo.lua:2: boom")
            XCTAssertEqual(location, "demo.lua:2")
            XCTAssertTrue(traceback.contains("demo.lua:3: in main chunk"), traceback)
        }
    }

    func testSyntaxErrorNamesTheLine() throws {
        let lua = try LuaState()
        XCTAssertThrowsError(try lua.load(string: "local a = 1\nlocal b = = 2\n", name: "bad.lua")) { error in
            guard case .syntax(let file, let line, let message) = error as? LuaError else { return XCTFail("\(error)") }
            XCTAssertEqual(file, "bad.lua")
            XCTAssertEqual(line, 2)
            XCTAssertTrue(message.contains("unexpected symbol"), message)
            XCTAssertEqual((error as? LuaError)?.location, "bad.lua:2")
        }
    }

    func testFileChunksAreNamedAfterTheirFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("luakit-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let path = dir.appendingPathComponent("script.lua").path
        try "\n\nerror('from the file')".write(toFile: path, atomically: true, encoding: .utf8)
        let lua = try LuaState()
        XCTAssertThrowsError(try lua.run(file: path)) { error in
            XCTAssertEqual((error as? LuaError)?.location, "\(path):3")
        }
        XCTAssertThrowsError(try lua.run(file: dir.appendingPathComponent("missing.lua").path)) { error in
            XCTAssertTrue("\(error)".contains("does not exist"), "\(error)")
        }
    }

    func testBinaryChunksAreRefusedUnlessAskedFor() throws {
        let lua = try LuaState()
        let dump = try lua.run(string: "return string.dump(function() return 42 end)", name: "dump")[0]
        guard case .string(let bytes) = dump else { return XCTFail() }
        let load = try lua.load(string: "local s, mode = ... return load(s, 'bin', mode)", name: "loader")
        // Our own loader refuses binary by default.
        XCTAssertThrowsError(try lua.load(string: String(decoding: bytes.bytes, as: UTF8.self), name: "bin"))
        // A trusted script may still ask for it explicitly with standard `load`.
        let r = try lua.call(load, [.value(dump), "b"]) { slots in slots.isFunction(1) }
        XCTAssertTrue(r)
    }

    func testErrorWithATableValueIsDescribed() throws {
        let lua = try LuaState()
        XCTAssertThrowsError(try lua.run(string: "error({ code = 1 })", name: "t")) { error in
            XCTAssertTrue("\(error)".contains("error object is a table value"), "\(error)")
        }
    }
}
