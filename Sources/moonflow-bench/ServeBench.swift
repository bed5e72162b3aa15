import Foundation
import MoonflowHost
import MoonflowHostTools
import LuaKit
import MoonflowLua

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
        let edited = try EditedCounter(name: "serve")
        defer { edited.remove() }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: BenchEnvironment.moonflow)
        process.arguments = ["serve", "plugins", "--format", "jsonl"]
        process.currentDirectoryURL = edited.dir
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
            try edited.edit(i)
            let start = DispatchTime.now().uptimeNanoseconds
            guard reloaded.wait(timeout: .now() + 5) == .success else {
                throw BenchError("no reload within 5 s of edit \(i + 1)")
            }
            ms.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            Thread.sleep(forTimeInterval: 0.02)  // edits a person makes are apart
        }
        withExtendedLifetime(token) {}
        return ms
    }
    guard let ms = result else { return }
    printLatencies(
        ms,
        "save to an app's reload through moonflow serve (loopback), \(ms.count) edits, from write() returning to the app's reload event",
        p50: 30, p95: 60)
}
