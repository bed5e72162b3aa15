import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The process's resident memory, for the tests that bound what a long run keeps (what a
/// user's `top` shows, read from /proc as the issues that found the growth measured it).
///
///     try XCTSkipIf(ResidentMemory.underSanitizer, "resident memory under a sanitizer measures the sanitizer")
///     let before = try ResidentMemory.bytes()
public enum ResidentMemory {
    public struct Unreadable: Error, CustomStringConvertible {
        public let description: String
    }

    /// VmRSS now, in bytes.
    public static func bytes() throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else {
            throw Unreadable(description: "no VmRSS in /proc/self/status")
        }
        return kilobytes * 1024
    }

    /// Whether a sanitizer's allocator runs this process: then its quarantine of freed memory
    /// and its shadow memory, not the code under test, decide the resident size (the plain
    /// xctest and release phases of scripts/test measure it).
    public static var underSanitizer: Bool {
        guard let program = dlopen(nil, RTLD_NOW) else { return false }
        defer { dlclose(program) }
        return ["__asan_init", "__tsan_init"].contains { (name: String) in dlsym(program, name) != nil }
    }
}
