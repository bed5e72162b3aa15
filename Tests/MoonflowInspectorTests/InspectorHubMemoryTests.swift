import Foundation
import LuaKit
import MoonflowInspector
import XCTest

/// The actions the hub keeps for `rerun` and `toggle` take at most their quarter of the bytes
/// it is given, counted as memory, not as their text (issue 64: at the default 64 MB, a long
/// `moonflow run --inspect` of small actions grew `moonflow-inspector` by about 250 bytes an
/// action, four times what it counted, until some 275,000 actions).
final class InspectorHubMemoryTests: XCTestCase {
    /// The process's resident memory now (VmRSS), in bytes: what the issue measured.
    private func resident() throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        return try XCTUnwrap(Int(line.split(separator: " ")[1])) * 1024
    }

    /// Whether a sanitizer's allocator runs this process: then its quarantine of freed memory
    /// and its shadow memory, not the code under test, decide the resident size (the plain
    /// xctest and release phases measure it).
    private var underSanitizer: Bool {
        guard let program = dlopen(nil, RTLD_NOW) else { return false }
        defer { dlclose(program) }
        return ["__asan_init", "__tsan_init"].contains { (name: String) in dlsym(program, name) != nil }
    }

    func testTheActionsKeptForRerunStayWithinTheirQuarterOfTheBytesGiven() throws {
        try XCTSkipIf(underSanitizer, "resident memory under a sanitizer measures the sanitizer")
        let bytes = 8 << 20
        let hub = InspectorHub(limits: .init(frames: 10, bytes: bytes))
        let action: LuaValue = ["type": "increment"]
        // What the first JSON written sets up once is not the hub's.
        let warm = InspectorHub(limits: .init(frames: 10, bytes: bytes))
        for i in 1...1_000 { warm.input(action, t: i) }
        let before = try resident()
        var most = 0
        for i in 1...36_000 {
            hub.input(action, t: i)
            if i % 500 == 0 { most = max(most, try resident() - before) }
        }
        XCTAssertLessThan(most, bytes / 4 + bytes / 8,
                          "the actions kept for rerun grew the process by up to \(most) bytes; their share is \(bytes / 4)")
    }
}
