import Foundation

/// Where the suites find the repository, the external programs they measure
/// side by side, and how much work to do. `scripts/bench` sets the variables;
/// run from the repository root without them, the defaults fit a release build.
///
///     MOONFLOW_BENCH_CAPI=.build/bench/counter_capi moonflow-bench feature
///
/// - `MOONFLOW_BENCH_ROOT`: the repository (default: the current directory).
/// - `MOONFLOW_BENCH_CAPI`: the built `bench/counter_capi.c`.
/// - `MOONFLOW_BIN`: the release `moonflow` binary (default `.build/release/moonflow`).
/// - `MOONFLOW_BIN_STATIC`: the same built with `--static-swift-stdlib` (start-up only).
/// - `MOONFLOW_BIN_BASELINE`: another build of `moonflow` (the commit before a change), run
///   beside `MOONFLOW_BIN` (print only).
/// - `MOONFLOW_BENCH_OPENCOMBINE`: the built `bench/opencombine-counter` peer.
/// - `MOONFLOW_BENCH_SCALE`: divides every action count (2 halves them) for a quick look;
///   figures at a scale other than 1 are not the ones to compare with the targets the
///   suites print, which are stated for the full counts.
enum BenchEnvironment {
    static let variables = ProcessInfo.processInfo.environment

    static var root: String { variables["MOONFLOW_BENCH_ROOT"] ?? FileManager.default.currentDirectoryPath }
    static var capi: String { variables["MOONFLOW_BENCH_CAPI"] ?? root + "/.build/bench/counter_capi" }
    static var moonflow: String { variables["MOONFLOW_BIN"] ?? root + "/.build/release/moonflow" }
    /// The same host linked with `--static-swift-stdlib` (`MOONFLOW_BIN_STATIC`), if built.
    static var moonflowStatic: String? { variables["MOONFLOW_BIN_STATIC"] }
    static var lua: String { variables["MOONFLOW_BENCH_LUA"] ?? "lua5.4" }
    /// The built `bench/opencombine-counter` (a package of its own).
    static var openCombine: String {
        variables["MOONFLOW_BENCH_OPENCOMBINE"] ?? root
            + "/bench/opencombine-counter/.build/release/opencombine-counter"
    }

    /// `count` divided by `MOONFLOW_BENCH_SCALE` (at least 1).
    static func scaled(_ count: Int) -> Int {
        let scale = variables["MOONFLOW_BENCH_SCALE"].flatMap { Int($0) } ?? 1
        return max(1, count / max(1, scale))
    }

    static func path(_ relative: String) -> String { root + "/" + relative }
}

/// The `name value key=value...` lines an external benchmark prints (`bench/*.lua`, `counter_capi`).
struct ExternalFigures {
    private var values: [String: Double] = [:]

    init(output: String) {
        for line in output.split(separator: "\n") {
            let words = line.split(separator: " ")
            guard words.count >= 2, let value = Double(words[1]) else { continue }
            values[String(words[0])] = value
        }
    }

    subscript(name: String) -> Double? { values[name] }
}

/// Runs a program to its end and returns what it printed.
///
///     let out = try runProgram("lua5.4", ["bench/rows.lua"])
///
/// - Parameters:
///   - program: an absolute path, or a name looked up in `PATH`.
/// - Throws: `BenchError` when it cannot start or exits with a failure.
func runProgram(_ program: String, _ arguments: [String]) throws -> ExternalFigures {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [program] + arguments
    process.currentDirectoryURL = URL(fileURLWithPath: BenchEnvironment.root)
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw BenchError("\(program) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus)")
    }
    return ExternalFigures(output: String(decoding: data, as: UTF8.self))
}

/// Why a figure could not be measured; the suite prints it in the figure's place.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One line of a side-by-side table: a label padded to `width`, then the figure.
func row(_ label: String, _ value: Double?, _ unit: String, note: String = "", width: Int = 46) -> String {
    let padded = label.padding(toLength: max(width, label.count), withPad: " ", startingAt: 0)
    guard let value else { return "  \(padded)       n/a \(unit)\(note.isEmpty ? "" : "  " + note)" }
    return "  \(padded)\(format(value, unit))\(note.isEmpty ? "" : "  " + note)"
}

/// `a / b` as `"2.30x"`, or n/a when either side is missing.
func ratio(_ a: Double?, _ b: Double?) -> String {
    guard let a, let b, b > 0 else { return "n/a" }
    return String(format: "%.2fx", a / b)
}

/// A table line holding the ratio `a / b` in the figures' column.
func ratioRow(_ label: String, _ a: Double?, _ b: Double?, width: Int = 46) -> String {
    let padded = label.padding(toLength: max(width, label.count), withPad: " ", startingAt: 0)
    let text = ratio(a, b)
    return "  \(padded)\(String(repeating: " ", count: max(0, 10 - text.count)))\(text)"
}

/// "met" or "NOT met", for the targets a suite prints beside its figures (the cost a
/// Moonflow feature may add over the plain-Lua and C hosts, start-up, publishing).
func verdict(_ met: Bool?) -> String {
    guard let met else { return "unknown" }
    return met ? "met" : "NOT met"
}

/// Runs `body`, or prints why it failed in the figure's place (a missing program, a Lua error).
func attempt<T>(_ what: String, _ body: () throws -> T) -> T? {
    do { return try body() } catch {
        print("  \(what): \(error)")
        return nil
    }
}
