import Foundation
import LuaKit
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

    /// The C heap in use now, in bytes: under a sanitizer its count of the heap allocated and
    /// not yet freed, else malloc's own (`LuaState.cHeapInUse`). Steadier than the resident
    /// size for a bound of a few hundred kilobytes (pages the allocator keeps are not in it).
    public static func heapBytes() throws -> Int {
        if let heapInUse = sanitizerHeapInUse { return Int(heapInUse()) }
        guard let bytes = LuaState.cHeapInUse else { throw Unreadable(description: "the C library does not say") }
        return bytes
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
