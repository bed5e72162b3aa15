import Foundation
import LuaKit
import MoonflowEvents
import MoonflowLua
import MoonflowRun
import XCTest

/// `moonflow run --inspect` (and `--record`) hands every event to a `SessionRecorder`: what it
/// keeps must not grow with the number of actions, however long the run (issue 64).
final class SessionRecorderMemoryTests: XCTestCase {
    private struct NoDispatch: RunDispatcher {
        func dispatch(_ action: LuaValue) throws {}
        var inFlight: [FeatureFlight] { [] }
        func restart() throws {}
    }

    /// The process's resident memory now (VmRSS), in bytes: what the issue measured.
    private func resident() throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        return try XCTUnwrap(Int(line.split(separator: " ")[1])) * 1024
    }

    /// The recorder `run --inspect` adds without `--record` (`handAnswers`) keeps a count of
    /// the actions it saw, for where a service answer arrives; 100,000 actions once kept
    /// two objects each (about 10 MB resident), for as long as the run lived.
    /// Whether a sanitizer's allocator runs this process: then its quarantine of freed memory
    /// and its shadow memory, not the code under test, decide the resident size (the plain
    /// xctest and release phases measure it).
    private var underSanitizer: Bool {
        guard let program = dlopen(nil, RTLD_NOW) else { return false }
        defer { dlclose(program) }
        return ["__asan_init", "__tsan_init"].contains { (name: String) in dlsym(program, name) != nil }
    }

    func testTheRecorderKeepsNoMemoryPerAction() throws {
        try XCTSkipIf(underSanitizer, "resident memory under a sanitizer measures the sanitizer")
        let recorder = SessionRecorder(answersOnly: { _ in })
        recorder.started(RunDescription(name: "counter", version: 1, path: "plugins/counter", actions: nil, clock: .real, now: { 5 }),
                         dispatch: NoDispatch())
        let action = FeatureEvent.action(["type": "increment"])
        for _ in 0..<1_000 { recorder.observe(action, t: 5, cause: nil) }
        let before = try resident()
        for _ in 0..<100_000 { recorder.observe(action, t: 5, cause: nil) }
        let grown = try resident() - before
        XCTAssertLessThan(grown, 2 << 20, "100,000 actions grew the process by \(grown) bytes (\(grown / 100_000) per action)")
    }
}
