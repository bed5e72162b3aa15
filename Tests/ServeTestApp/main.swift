import Foundation
import MoonflowHost
import MoonflowHostTools

// An app as `moonflow serve`'s end-to-end tests drive it: a host that loads one plugin from
// the dev server (`host.connect(devServer:)`; MoonflowHost, and MoonflowHostTools for its events), takes JSON actions on its
// standard input, and prints what the app sees on its standard output, one JSON object per
// line: `{"app":"event",...}` for each of the feature's events (InspectorPipe's encoding),
// `{"app":"error","message":...}` for each error on the feature's `errors`.
//   moonflow-serve-testapp URL PLUGIN

// SIGTERM ends it, whatever thread the test started it from (a child inherits the mask of
// the thread that started it, and a GCD or Swift concurrency thread blocks every signal).
var noSignalsBlocked = sigset_t()
sigemptyset(&noSignalsBlocked)
pthread_sigmask(SIG_SETMASK, &noSignalsBlocked, nil)

let arguments = CommandLine.arguments
guard arguments.count == 3, let url = URL(string: arguments[1]) else {
    FileHandle.standardError.write(Data("usage: moonflow-serve-testapp URL PLUGIN\n".utf8))
    exit(2)
}
/// Whole lines on standard output, from any thread.
enum Out {
    static let lock = NSLock()
    static func say(_ line: String) {
        lock.withLock { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
    }
}

do {
    let host = try FeatureHost(configuration: .init(searchPaths: []))
    let link = try host.connect(devServer: url)
    let feature = try host.load(arguments[2])
    let token = feature.observe { event in
        Out.say("{\"app\":\"event\"," + InspectorPipe.line(.event(event, t: 0, cause: nil)).dropFirst())
    }
    let reported = feature.errors
    // Detached: the main thread is busy reading standard input.
    let errors = Task.detached {
        for await error in reported {
            let message = (try? LuaValue("\(error)").json()) ?? "\"\""
            Out.say("{\"app\":\"error\",\"message\":\(message)}")
        }
    }
    feature.start()
    while let line = readLine() {
        // `:link` asks what a debug badge would show: whether the link to the server is up.
        if line == ":link" { Out.say("{\"app\":\"link\",\"connected\":\(link.isConnected)}"); continue }
        do { try feature.send(json: line) } catch { Out.say("{\"app\":\"refused\"}") }
    }
    // Input ended: the app runs on until it is stopped (as an app's screen would).
    withExtendedLifetime((token, errors)) {
        while true { Thread.sleep(forTimeInterval: 3600) }
    }
} catch {
    FileHandle.standardError.write(Data("moonflow-serve-testapp: \(error)\n".utf8))
    exit(1)
}
