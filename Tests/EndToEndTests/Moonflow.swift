import Foundation
import XCTest

/// The built `moonflow` binary, run as a user would, from the package root.
///
///     let result = try Moonflow.run(["check", "plugins/counter"])
///     XCTAssertEqual(result.status, 0)
enum Moonflow {
    /// The package root (where `Package.swift` and `plugins/` are), found from this file.
    static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // EndToEndTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()

    /// What one run printed and how it ended.
    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Where the binary is: beside the test bundle (the build folder), or `MOONFLOW_BIN`.
    static func binary() throws -> URL {
        let fm = FileManager.default
        if let explicit = ProcessInfo.processInfo.environment["MOONFLOW_BIN"] {
            return URL(fileURLWithPath: explicit)
        }
        var folders: [URL] = []
        // Linux: arguments[0] is the .xctest executable inside the build folder.
        if let first = ProcessInfo.processInfo.arguments.first {
            folders.append(URL(fileURLWithPath: first).resolvingSymlinksInPath().deletingLastPathComponent())
        }
        // macOS: the .xctest bundle sits in the build folder (xctest is the main executable).
        for bundle in [Bundle(for: BundleToken.self), Bundle.main] {
            var url = bundle.bundleURL
            while url.pathComponents.count > 1 {
                if url.pathExtension == "xctest" { folders.append(url.deletingLastPathComponent()); break }
                url.deleteLastPathComponent()
            }
            folders.append(bundle.bundleURL.deletingLastPathComponent())
        }
        for folder in folders {
            let candidate = folder.appendingPathComponent("moonflow")
            if fm.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw MissingBinary(searched: folders.map(\.path))
    }

    /// Whether the binary under test is built with AddressSanitizer (its runtime linked in).
    static func isAddressSanitized() throws -> Bool {
        let data = try Data(contentsOf: try binary(), options: .alwaysMapped)
        return data.range(of: Data("__asan_init".utf8)) != nil
    }

    struct MissingBinary: Error, CustomStringConvertible {
        let searched: [String]
        var description: String {
            "the moonflow binary is not built; looked in \(searched.joined(separator: ", ")). "
                + "Build it with the tests: swift build --build-tests (or set MOONFLOW_BIN)"
        }
    }

    /// Runs `moonflow ARGS` in the package root (or `directory`) with standard input empty
    /// (or `input`), and `environment` added to this process's.
    ///
    /// - Throws: `MissingBinary`, or a timeout after `timeout` seconds (the process is killed).
    static func run(
        _ arguments: [String], in directory: URL = root, timeout: TimeInterval = 60,
        input: String? = nil, environment: [String: String] = [:]
    ) throws -> Result {
        try run(
            executable: try binary(), arguments, in: directory, timeout: timeout, input: input, environment: environment
        )
    }

    /// Runs any program as `run` runs moonflow (for side-by-side runs of `lua5.4`).
    static func run(
        executable: URL, _ arguments: [String], in directory: URL = root, timeout: TimeInterval = 60,
        input: String? = nil, environment: [String: String] = [:]
    ) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.currentDirectoryURL = directory
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("moonflow-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let out = scratch.appendingPathComponent("stdout"), err = scratch.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let outHandle = try FileHandle(forWritingTo: out), errHandle = try FileHandle(forWritingTo: err)
        process.standardOutput = outHandle
        process.standardError = errHandle
        if let input {
            let inFile = scratch.appendingPathComponent("stdin")
            try Data(input.utf8).write(to: inFile)
            process.standardInput = try FileHandle(forReadingFrom: inFile)
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        try process.run()
        if done.wait(timeout: .now() + timeout) == .timedOut {
            let threads = Self.threads(of: process.processIdentifier)
            let printed = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
            process.terminate()
            _ = done.wait(timeout: .now() + 5)
            throw Timeout(
                command: "moonflow " + arguments.joined(separator: " "), seconds: timeout,
                threads: threads, printed: String(printed.suffix(2000)))
        }
        try outHandle.close()
        try errHandle.close()
        return Result(
            status: process.terminationStatus,
            stdout: try String(contentsOf: out, encoding: .utf8),
            stderr: try String(contentsOf: err, encoding: .utf8))
    }

    /// Debian's `lua5.4`, when installed (scripts/setup installs it).
    static var lua: URL? {
        ["/usr/bin/lua5.4", "/usr/local/bin/lua5.4"].map(URL.init(fileURLWithPath:))
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    struct Timeout: Error, CustomStringConvertible {
        let command: String
        let seconds: TimeInterval
        /// Where each of its threads waited when it was killed, and the end of what it printed.
        var threads = ""
        var printed = ""
        var description: String {
            "\(command) did not finish within \(Int(seconds)) s; it was killed. Its threads (name: kernel wait):\n"
                + threads + "\nits standard output ended with:\n" + printed
        }
    }

    /// Each thread of process `pid`, by name, with the kernel function it waits in (Linux's
    /// /proc; empty elsewhere): what a run that never ended was doing.
    static func threads(of pid: Int32) -> String {
        let folder = "/proc/\(pid)/task"
        let ids = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return ids.sorted { (Int($0) ?? 0) < (Int($1) ?? 0) }.map { id in
            func read(_ name: String) -> String {
                ((try? String(contentsOfFile: "\(folder)/\(id)/\(name)", encoding: .utf8)) ?? "?")
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            }
            return "  \(id) \(read("comm")): \(read("wchan"))"
        }.joined(separator: "\n")
    }

    /// A line diff of `expected` against `actual`: `- ` lines only expected, `+ ` only actual,
    /// `  ` both (unchanged runs longer than a few lines are elided).
    static func diff(expected: String, actual: String) -> String {
        let a = expected.components(separatedBy: "\n"), b = actual.components(separatedBy: "\n")
        // Longest common subsequence table, from the ends.
        var lcs = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in stride(from: a.count - 1, through: 0, by: -1) {
            for j in stride(from: b.count - 1, through: 0, by: -1) {
                lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : max(lcs[i + 1][j], lcs[i][j + 1])
            }
        }
        var lines: [(Character, String)] = []
        var i = 0, j = 0
        while i < a.count || j < b.count {
            if i < a.count, j < b.count, a[i] == b[j] {
                lines.append((" ", a[i])); i += 1; j += 1
            } else if i < a.count, j == b.count || lcs[i + 1][j] >= lcs[i][j + 1] {
                lines.append(("-", a[i])); i += 1
            } else {
                lines.append(("+", b[j])); j += 1
            }
        }
        // Keep two lines of context around changes.
        let changed = lines.indices.filter { lines[$0].0 != " " }
        var out: [String] = []
        var lastShown = -1
        for (index, line) in lines.enumerated() {
            let near = changed.contains { abs($0 - index) <= 2 }
            if near {
                if lastShown >= 0 && index > lastShown + 1 { out.append("  ...") }
                out.append("\(line.0) \(line.1)")
                lastShown = index
            }
        }
        return out.joined(separator: "\n")
    }
}

private final class BundleToken {}
