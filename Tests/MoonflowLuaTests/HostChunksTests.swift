import Foundation
import LuaKit
import MoonflowLua
import XCTest

/// The bytecode shipped beside the host's Lua (Sources/*/Lua/compiled) is what
/// its text compiles to now. A stale one costs only speed (the text is compiled
/// instead), so this test is what notices it.
///
/// `scripts/precompile-lua` runs this test with `MOONFLOW_WRITE_PRECOMPILED=1`, which
/// writes the files instead of comparing them.
final class HostChunksTests: XCTestCase {
    private static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")

    func testEachShippedBytecodeIsWhatItsTextCompilesTo() throws {
        let lua = try LuaState()
        let writing = ProcessInfo.processInfo.environment["MOONFLOW_WRITE_PRECOMPILED"] == "1"
        for (file, chunk) in HostChunks.all {
            let current = try lua.precompile(source: chunk.source, name: chunk.name)
            if writing {
                try Data(current).write(to: Self.sources.appendingPathComponent(file))
            } else {
                XCTAssertTrue(
                    chunk.compiled == current,
                    "Sources/\(file) is stale (its text changed, or the Lua release did): run scripts/precompile-lua and commit what it writes"
                )
            }
        }
    }
}
