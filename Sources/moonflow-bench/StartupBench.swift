import Foundation

// The host's start-up. Wall time of a whole `moonflow run` of the
// counter over a short action file (release binary, virtual clock, jsonl)
// against `lua5.4 -e ''`, the two alternated so that both see the same machine.

/// Prints the median wall time in ms of each command over the same alternated runs:
/// the host as `swift build` links it (the Swift runtime and Foundation as shared
/// libraries), as `scripts/build-release` builds it to install (the Swift runtime, Lua,
/// SQLite and libstdc++ linked in, at a fixed address) when that build is there, and
/// `lua5.4 -e ''`.
func startupBench() {
    let runs = 15
    func run(_ binary: String) -> [String] {
        [
            binary, "run", BenchEnvironment.path("plugins/counter"), "--clock", "virtual",
            "--actions", BenchEnvironment.path("bench/counter_actions.jsonl"), "--format", "jsonl",
        ]
    }
    guard FileManager.default.isExecutableFile(atPath: BenchEnvironment.moonflow) else {
        print("  \(BenchEnvironment.moonflow) is missing: build it with swift build -c release --product moonflow")
        return
    }
    var commands: [(label: String, argv: [String])] = [
        ("moonflow run plugins/counter (5 actions)", run(BenchEnvironment.moonflow))
    ]
    var binaries = [BenchEnvironment.moonflow]
    if let binary = BenchEnvironment.moonflowStatic, FileManager.default.isExecutableFile(atPath: binary) {
        commands.append(("  the same, scripts/build-release (all linked in)", run(binary)))
        binaries.append(binary)
    }
    commands.append(("lua5.4 -e ''", [BenchEnvironment.lua, "-e", ""]))
    var times = Array(repeating: [Double](), count: commands.count)
    let measured: Bool? = attempt("start-up") {
        for command in commands { _ = try wallMs(command.argv) }  // warm the page cache before timing
        for _ in 0..<runs {
            for (i, command) in commands.enumerated() { times[i].append(try wallMs(command.argv)) }
        }
        return true
    }
    guard measured != nil else { return }
    let medians = times.map(median)
    print("start-up, wall time of the whole process (median of \(runs) alternated runs each)")
    // Each binary's size beside its start-up: mapping a larger one costs the kernel time.
    for (i, command) in commands.enumerated() {
        print(row(command.label, medians[i], "ms", note: i < binaries.count ? "binary \(megabytes(binaries[i]))" : ""))
    }
    let lua = medians[medians.count - 1]
    for i in commands.indices.dropLast() {
        print(ratioRow("ratio to lua5.4" + (i == 0 ? "" : " (static)"), medians[i], lua))
    }
    print("  target moonflow run <= 5 ms: \(verdict(medians.dropLast().min().map { $0 <= 5 }))")
    let size = fileSize(BenchEnvironment.moonflow).map { Double($0) / 1e6 }
    print("  target moonflow binary <= 30 MB (release): \(verdict(size.map { $0 <= 30 }))")
}

/// The size of the file at `path` in bytes, or nil when it cannot be read.
private func fileSize(_ path: String) -> Int? {
    (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue
}

/// `"12.3 MB"` (10^6 bytes), or `"? MB"`.
private func megabytes(_ path: String) -> String {
    fileSize(path).map { String(format: "%.1f MB", Double($0) / 1e6) } ?? "? MB"
}

private func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

/// Runs `command` (argv; the program is looked up in PATH) with output to /dev/null
/// and returns its wall time in ms, spawn to exit.
///
/// - Throws: `BenchError` when it cannot start or exits with a failure.
private func wallMs(_ command: [String]) throws -> Double {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    let argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
    defer { for p in argv { free(p) } }
    var pid: pid_t = 0
    let start = DispatchTime.now().uptimeNanoseconds
    let spawned = posix_spawnp(&pid, command[0], &actions, nil, argv, environ)
    guard spawned == 0 else { throw BenchError("cannot start \(command[0]): \(String(cString: strerror(spawned)))") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    let end = DispatchTime.now().uptimeNanoseconds
    guard status == 0 else { throw BenchError("\(command.joined(separator: " ")) failed (wait status \(status))") }
    return Double(end - start) / 1e6
}
