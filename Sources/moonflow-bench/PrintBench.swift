import Foundation

// Printing events: a whole release `moonflow run` of the counter over 20,000 actions on the
// virtual clock, each action printed as three jsonl lines (action, mutation, state), with
// `--record` (each event written again, to a file) and in pretty output beside it. Set
// MOONFLOW_BIN_BASELINE to another build of moonflow (the commit before a change to the
// printer, say) and its runs alternate with this one's, so both are measured on the
// machine at the same time.

func printBench() {
    guard FileManager.default.isExecutableFile(atPath: BenchEnvironment.moonflow) else {
        print("  \(BenchEnvironment.moonflow) is missing: build it with swift build -c release --product moonflow")
        return
    }
    let actions = BenchEnvironment.scaled(20_000)
    let runs = 7
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moonflow-print-\(getpid())")
    defer { try? FileManager.default.removeItem(at: folder) }
    var binaries = [("", BenchEnvironment.moonflow)]
    if let baseline = BenchEnvironment.variables["MOONFLOW_BIN_BASELINE"] {
        guard FileManager.default.isExecutableFile(atPath: baseline) else {
            print("  MOONFLOW_BIN_BASELINE=\(baseline) is not an executable")
            return
        }
        binaries.append(("baseline ", baseline))
    }
    let modes: [(String, [String])] = [
        ("jsonl", ["--format", "jsonl"]),
        ("jsonl --record", ["--format", "jsonl", "--record", folder.appendingPathComponent("run.jsonl").path]),
        ("pretty", ["--format", "pretty"]),
    ]
    var commands: [(label: String, argv: [String])] = []
    for (mode, extra) in modes {
        for (name, binary) in binaries {
            commands.append(
                (
                    "\(name)\(mode)",
                    [
                        binary, "run", BenchEnvironment.path("plugins/counter"), "--clock", "virtual",
                        "--actions", folder.appendingPathComponent("actions.jsonl").path,
                    ] + extra
                ))
        }
    }
    var times = Array(repeating: [Double](), count: commands.count)
    let measured: Bool? = attempt("printing events") {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try String(repeating: "{\"type\":\"increment\"}\n", count: actions)
            .write(to: folder.appendingPathComponent("actions.jsonl"), atomically: true, encoding: .utf8)
        for command in commands { _ = try quietWallMs(command.argv) }  // warm the page cache before timing
        for _ in 0..<runs {
            for (i, command) in commands.enumerated() { times[i].append(try quietWallMs(command.argv)) }
        }
        return true
    }
    guard measured != nil else { return }
    print(
        "printing events: moonflow run plugins/counter, \(actions) actions (3 lines each), virtual clock, output to /dev/null (median of \(runs) alternated runs)"
    )
    for (i, command) in commands.enumerated() {
        let ms = times[i].sorted()[runs / 2]
        print(row(command.label, ms, "ms", note: String(format: "%.2f µs/action", ms * 1000 / Double(actions))))
    }
}

/// Runs `command` with its output thrown away and returns its wall time in ms, spawn to exit.
private func quietWallMs(_ command: [String]) throws -> Double {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: command[0])
    process.arguments = Array(command.dropFirst())
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    let start = DispatchTime.now().uptimeNanoseconds
    try process.run()
    process.waitUntilExit()
    let end = DispatchTime.now().uptimeNanoseconds
    guard process.terminationStatus == 0 else {
        throw BenchError("\(command.joined(separator: " ")) exited \(process.terminationStatus)")
    }
    return Double(end - start) / 1e6
}
