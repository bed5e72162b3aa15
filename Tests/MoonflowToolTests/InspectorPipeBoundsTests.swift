import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowLua
import MoonflowTool
import Streams
import XCTest

/// The pipe between `moonflow run --inspect` and its inspector, bounded on both sides (round
/// three: an 8 MB state line cost the inspector 21 s of CPU, rescanned after each 64 KB
/// read, while the run queued every later event in memory without bound; and a child that
/// never said where it serves held the run forever, deaf to SIGINT and SIGTERM).
final class InspectorPipeBoundsTests: XCTestCase {
    private var dir: URL!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("inspector-pipe-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// A stand-in for moonflow-inspector: a shell script.
    private func child(_ script: String) throws -> URL {
        let url = dir.appendingPathComponent("fake-inspector")
        try Data("#!/bin/sh\n\(script)\n".utf8).write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
        return url
    }

    func testALongLineIsSplitLookingAtEachByteOnce() {
        var splitter = LineSplitter()
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: 8 << 20)
        var lines: [String] = []
        var i = 0
        // An 8 MB line then short ones, in 64 KB reads as the inspector reads its pipe.
        let bytes = long + Array("\nshort\n\nlast".utf8)
        while i < bytes.count {
            lines += splitter.add(bytes[i..<min(i + 65536, bytes.count)])
            i += 65536
        }
        if let last = splitter.finish() { lines.append(last) }
        XCTAssertEqual(lines.map(\.utf8.count), [8 << 20, 5, 0, 4])
        XCTAssertLessThanOrEqual(splitter.bytesScanned, bytes.count, "each byte is looked at once")
    }

    func testLinesSplitAnywhereComeOutWhole() {
        let text = "{\"a\":1}\n{\"b\":\"é\"}\n\n{\"c\":3}\n"
        let bytes = Array(text.utf8)
        for size in 1...bytes.count {
            var splitter = LineSplitter()
            var lines: [String] = []
            var i = 0
            while i < bytes.count {
                lines += splitter.add(bytes[i..<min(i + size, bytes.count)])
                i += size
            }
            XCTAssertNil(splitter.finish())
            XCTAssertEqual(lines, ["{\"a\":1}", "{\"b\":\"é\"}", "", "{\"c\":3}"], "reads of \(size)")
        }
    }

    /// A child that stops reading: the run's events queue up to the bytes given and are then
    /// dropped, said once; replies still go.
    func testEventsForAChildThatDoesNotReadAreDroppedPastTheLimitSayingSo() throws {
        let fake = try child(
            #"echo '{"m":"listening","url":"http://127.0.0.1:1/?token=x","authorities":[]}'; exec sleep 120 2>/dev/null"#
        )
        let warnings = Locked<[String]>([])
        let limit = 1 << 20
        let inspector = try InspectorProcess.start(
            address: "127.0.0.1:0", frames: 10, bytes: limit, binary: fake, startTimeout: 30,
            warn: { message in warnings.withLock { $0.append(message) } })
        let state = LuaValue(["text": LuaValue(String(repeating: "y", count: 1000))])
        for i in 0..<20_000 { inspector.observe(.state(state, seq: i), t: i, cause: nil) }
        XCTAssertLessThanOrEqual(inspector.queuedBytes, limit)
        XCTAssertGreaterThan(inspector.droppedEvents, 0)
        XCTAssertEqual(warnings.withLock { $0 }.count, 1, "said once: \(warnings.withLock { $0 })")
        XCTAssertTrue(
            warnings.withLock { $0 }.first?.contains("fell 1 MB behind") ?? false, "\(warnings.withLock { $0 })")
    }

    func testAChildThatSaysNothingIsStoppedAtTheStartTimeout() throws {
        let fake = try child("exec sleep 120 2>/dev/null")
        XCTAssertThrowsError(
            try InspectorProcess.start(
                address: "127.0.0.1:0", frames: 10, bytes: 1 << 20, binary: fake, startTimeout: 0.5)
        ) { error in
            XCTAssertTrue(
                "\(error)".contains("did not say where it serves the page within 0.5 s; it was stopped"), "\(error)")
        }
    }
}
