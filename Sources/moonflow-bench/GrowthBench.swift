import Foundation

// Growth: a todo list that grows by one item per action (bench/grow) through a
// whole release `moonflow run` on the virtual clock, in pretty output and in
// jsonl with `--state patch`. The cost per action must not grow with the state
// (a snapshot, a printed line or a patch that copied the whole state would make
// a long session quadratic): runs of 2,500 and 10,000 actions show whether it
// does. 20,000 actions take minutes while the cost still grows;
// MOONFLOW_BENCH_GROWTH=20000 runs that size.

func growthBench() {
    let sizes =
        BenchEnvironment.variables["MOONFLOW_BENCH_GROWTH"].flatMap { Int($0) }.map { [$0] }
        ?? [BenchEnvironment.scaled(2_500), BenchEnvironment.scaled(10_000)]
    for actions in sizes { growthRun(actions: actions) }
}

private func growthRun(actions: Int) {
    guard FileManager.default.isExecutableFile(atPath: BenchEnvironment.moonflow) else {
        print("  \(BenchEnvironment.moonflow) is missing: build it with swift build -c release --product moonflow")
        return
    }
    let input = FileManager.default.temporaryDirectory.appendingPathComponent("moonflow-grow-\(getpid()).jsonl")
    defer { try? FileManager.default.removeItem(at: input) }
    let result: [(String, Double)]? = attempt("growth") {
        try String(repeating: "{\"type\":\"add\"}\n", count: actions).write(
            to: input, atomically: true, encoding: .utf8)
        let base = [
            BenchEnvironment.moonflow, "run", BenchEnvironment.path("bench/grow"), "--clock", "virtual", "--actions",
            input.path,
        ]
        var rows: [(String, Double)] = []
        for (label, extra) in [
            ("pretty", ["--format", "pretty"]), ("jsonl --state patch", ["--format", "jsonl", "--state", "patch"]),
        ] {
            let start = DispatchTime.now().uptimeNanoseconds
            try runQuietly(base + extra)
            rows.append((label, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9))
        }
        return rows
    }
    guard let rows = result else { return }
    print(
        "a list growing by one item per action, \(actions) actions through moonflow run (virtual clock), wall time (target: 20,000 in < 2 s)"
    )
    for (label, seconds) in rows {
        print(row(label, seconds, "s", note: "\(String(format: "%.1f", seconds * 1e6 / Double(actions))) µs/action"))
    }
}

/// Runs a command with its output thrown away; fails unless it exits 0.
private func runQuietly(_ command: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: command[0])
    process.arguments = Array(command.dropFirst())
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw BenchError("\(command.joined(separator: " ")) exited \(process.terminationStatus)")
    }
}
