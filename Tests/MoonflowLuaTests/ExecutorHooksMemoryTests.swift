import Foundation
import LuaKit
import MoonflowLua
import Streams
import XCTest

/// A host on a queue executor asks its bridge on every send whether the caller is on the
/// state executor, and runs Swift results through the bridge's performer. Each of those
/// reads once wrapped the stored closure in two more conversion thunks, kept for the
/// bridge's life: memory that grew with every action, and a chain that every later call
/// walked, until the stack overflowed after a few hundred thousand actions.
final class ExecutorHooksMemoryTests: XCTestCase {
    /// The process's resident memory now (VmRSS), in bytes.
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

    func testAskingTheExecutorCheckAndThePerformerKeepsNothing() throws {
        try XCTSkipIf(underSanitizer, "resident memory under a sanitizer measures the sanitizer")
        let lua = try LuaState()
        defer { lua.close() }
        let bridge = try LuaBridge(lua: lua, scheduler: TestScheduler())
        bridge.setExecutorCheck { true }
        bridge.performer = { $0() }
        for _ in 0..<1_000 { _ = bridge.isOnExecutor; _ = bridge.performer }
        let before = try resident()
        var ran = 0
        for _ in 0..<50_000 {
            XCTAssertTrue(bridge.isOnExecutor)
            bridge.performer? { ran += 1 }
        }
        let grown = try resident() - before
        XCTAssertEqual(ran, 50_000)
        XCTAssertLessThan(grown, 1 << 20, "50,000 sends grew the process by \(grown) bytes (\(grown / 50_000) per send)")
    }
}
