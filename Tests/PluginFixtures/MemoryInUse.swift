import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The memory the process holds, for the tests that bound what a long run keeps.
///
/// In a plain build, the resident size (what a user's `top` shows, read from /proc as the
/// issues that found the growth measured it). Under AddressSanitizer or ThreadSanitizer,
/// where scripts/test runs every test, the resident size measures the sanitizer (its
/// quarantine of freed memory, its shadow), so the sanitizer's own count of the heap
/// allocated and not yet freed stands in: growth kept by the code under test shows in both.
///
///     let before = try MemoryInUse.bytes()
public enum MemoryInUse {
    public struct Unreadable: Error, CustomStringConvertible {
        public let description: String
    }

    /// The resident size (VmRSS) now, in bytes, or under a sanitizer the heap in use.
    public static func bytes() throws -> Int {
        if let heapInUse = sanitizerHeapInUse { return Int(heapInUse()) }
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else {
            throw Unreadable(description: "no VmRSS in /proc/self/status")
        }
        return kilobytes * 1024
    }

    /// What is measured, for a failure's message.
    public static var measure: String { sanitizerHeapInUse == nil ? "resident memory" : "the sanitizer's heap in use" }

    /// The sanitizer runtime's `__sanitizer_get_current_allocated_bytes`, when one is linked in.
    private static let sanitizerHeapInUse: (@convention(c) () -> Int)? = {
        guard let program = dlopen(nil, RTLD_NOW) else { return nil }
        defer { dlclose(program) }
        guard let symbol = dlsym(program, "__sanitizer_get_current_allocated_bytes") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) () -> Int).self)
    }()
}
