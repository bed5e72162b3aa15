import Foundation

// Hot reload latency. A release
// `moonflow run plugins/counter --watch` on a copy of the plugin; each of 100
// edits rewrites init.lua (alternating two reducers), and the time runs from
// write() returning to the `reload` event being printed.

func reloadBench() {
    let edits = 100
    guard FileManager.default.isExecutableFile(atPath: BenchEnvironment.moonflow) else {
        print("  \(BenchEnvironment.moonflow) is missing: build it with swift build -c release --product moonflow")
        return
    }
    let result: [Double]? = attempt("reload") {
        let counter = try EditedCounter(name: "reload")
        defer { counter.remove() }
        let dir = counter.dir

        let process = Process()
        process.executableURL = URL(fileURLWithPath: BenchEnvironment.moonflow)
        process.arguments = ["run", "plugins/counter", "--watch", "--format", "jsonl", "--actions", "-"]
        process.currentDirectoryURL = dir
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { process.terminate(); process.waitUntilExit() }
        let reader = LineReader(output.fileHandleForReading)
        _ = try reader.next(containing: "\"event\":\"state\"")
        Thread.sleep(forTimeInterval: 0.1)  // the watches are set up
        var ms: [Double] = []
        for i in 0..<edits {
            try counter.edit(i)
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try reader.next(containing: "\"event\":\"reload\"")
            ms.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            Thread.sleep(forTimeInterval: 0.02)  // edits a person makes are apart
        }
        return ms
    }
    guard let ms = result else { return }
    printLatencies(
        ms, "hot reload of plugins/counter, \(ms.count) edits, from write() returning to the reload event printed",
        p50: 20, p95: 50)
}

/// A copy of plugins/counter in a folder of its own (`dir/plugins/counter`), whose init.lua
/// each edit rewrites with the other of two reducers: what the reload and serve suites save.
struct EditedCounter {
    let dir: URL
    let initFile: URL
    private let variants: [String]

    init(name: String) throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("moonflow-\(name)-bench-\(getpid())")
        let plugin = dir.appendingPathComponent("plugins/counter")
        try? FileManager.default.removeItem(at: dir)
        try FileManager.default.createDirectory(at: plugin, withIntermediateDirectories: true)
        let original = try String(contentsOfFile: BenchEnvironment.path("plugins/counter/init.lua"), encoding: .utf8)
        initFile = plugin.appendingPathComponent("init.lua")
        try original.write(to: initFile, atomically: false, encoding: .utf8)
        variants = [
            original,
            original.replacingOccurrences(
                of: "state.count = state.count + m.n", with: "state.count = state.count + m.n * 2"),
        ]
        guard variants[0] != variants[1] else {
            throw BenchError("plugins/counter/init.lua changed: the bench's edit no longer applies")
        }
    }

    func remove() { try? FileManager.default.removeItem(at: dir) }

    /// Edit number `i` (from 0): one write() of the whole file, as an editor saves.
    func edit(_ i: Int) throws {
        let fd = open(initFile.path, O_WRONLY | O_TRUNC)
        guard fd >= 0 else { throw BenchError("cannot open \(initFile.path)") }
        let written = variants[(i + 1) % 2].utf8CString.withUnsafeBufferPointer {
            write(fd, $0.baseAddress, $0.count - 1)
        }
        close(fd)
        guard written > 0 else { throw BenchError("cannot write \(initFile.path)") }
    }
}

/// Prints the p50, p95 and max of `ms` under `title`, beside their targets.
func printLatencies(_ ms: [Double], _ title: String, p50: Int, p95: Int) {
    let sorted = ms.sorted()
    print(title)
    print(row("p50", sorted[sorted.count / 2], "ms", note: "target <= \(p50)"))
    print(row("p95", sorted[Int(Double(sorted.count) * 0.95) - 1], "ms", note: "target <= \(p95)"))
    print(row("max", sorted.last, "ms"))
}

/// Lines from a pipe, with a timeout per line (the reload and serve suites read moonflow with it).
final class LineReader {
    private let handle: FileHandle
    private var buffer = Data()

    init(_ handle: FileHandle) { self.handle = handle }

    func next(containing text: String, timeout: TimeInterval = 5) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer.removeSubrange(buffer.startIndex...newline)
                if line.contains(text) { return line }
            }
            let chunk = handle.availableData
            if chunk.isEmpty { throw BenchError("moonflow ended before printing \(text)") }
            buffer.append(chunk)
        }
        throw BenchError("no \(text) within \(timeout) s")
    }
}
