import Foundation
import MoonflowHost

// Save to an app's reload through `moonflow serve`. A release `moonflow serve` on a copy of
// plugins/counter, and in this process an app's host connected to it on loopback
// (`host.connect(devServer:)`); each of 100 edits rewrites init.lua (alternating two
// reducers), and the time runs from write() returning to the app's `reload` event.

func serveBench() {
    let edits = 100
    guard FileManager.default.isExecutableFile(atPath: BenchEnvironment.moonflow) else {
        print("  \(BenchEnvironment.moonflow) is missing: build it with swift build -c release --product moonflow")
        return
    }
    let result: [Double]? = attempt("serve") {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("moonflow-serve-bench-\(getpid())")
        let plugin = dir.appendingPathComponent("plugins/counter")
        try? FileManager.default.removeItem(at: dir)
        try FileManager.default.createDirectory(at: plugin, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let original = try String(contentsOfFile: BenchEnvironment.path("plugins/counter/init.lua"), encoding: .utf8)
        let initFile = plugin.appendingPathComponent("init.lua")
        try original.write(to: initFile, atomically: false, encoding: .utf8)
        let variants = [original, original.replacingOccurrences(of: "state.count = state.count + m.n", with: "state.count = state.count + m.n * 2")]
        guard variants[0] != variants[1] else { throw BenchError("plugins/counter/init.lua changed: the bench's edit no longer applies") }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: BenchEnvironment.moonflow)
        process.arguments = ["serve", "plugins", "--format", "jsonl"]
        process.currentDirectoryURL = dir
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { process.terminate(); process.waitUntilExit() }
        let reader = LineReader(output.fileHandleForReading)
        let line = try reader.next(containing: "\"event\":\"serve\"")
        guard let url = (try? LuaValue(json: line))?["url"]?.stringValue.flatMap(URL.init(string:)) else {
            throw BenchError("moonflow serve printed no URL: \(line)")
        }

        let host = try FeatureHost(configuration: .init(searchPaths: []))
        let source = try host.connect(devServer: url)
        defer { source.disconnect() }
        let counter = try host.load("counter")
        let reloaded = DispatchSemaphore(value: 0)
        let token = counter.observe(kinds: .reload) { event in
            if case .reload = event { reloaded.signal() }
        }
        counter.start()
        Thread.sleep(forTimeInterval: 0.1)  // the watches are set up
        var ms: [Double] = []
        for i in 0..<edits {
            let text = variants[(i + 1) % 2]
            let fd = open(initFile.path, O_WRONLY | O_TRUNC)
            guard fd >= 0 else { throw BenchError("cannot open \(initFile.path)") }
            let written = text.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
            close(fd)
            guard written > 0 else { throw BenchError("cannot write \(initFile.path)") }
            let start = DispatchTime.now().uptimeNanoseconds
            guard reloaded.wait(timeout: .now() + 5) == .success else { throw BenchError("no reload within 5 s of edit \(i + 1)") }
            ms.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            Thread.sleep(forTimeInterval: 0.02)  // edits a person makes are apart
        }
        withExtendedLifetime(token) {}
        return ms
    }
    guard let ms = result else { return }
    let sorted = ms.sorted()
    print("save to an app's reload through moonflow serve (loopback), \(ms.count) edits, from write() returning to the app's reload event")
    print(row("p50", sorted[sorted.count / 2], "ms", note: "target <= 30"))
    print(row("p95", sorted[Int(Double(sorted.count) * 0.95) - 1], "ms", note: "target <= 60"))
    print(row("max", sorted.last, "ms"))
}
