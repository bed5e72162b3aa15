import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowInspector
import MoonflowLua
import MoonflowRun
import MoonflowServe

// `moonflow-inspector`: the inspector's server for `moonflow run --inspect`, which starts
// it beside itself and feeds it the run over its stdin (InspectorPipe says how), and the
// dev server of `moonflow serve`. Kept out of `moonflow` so that the tool links neither
// Hummingbird nor SwiftNIO and starts fast.

unblockInheritedSignals()  // SIGTERM ends it, whatever thread its parent started it from

// `moonflow serve` runs this program as `moonflow-inspector serve …` (MoonflowServe's `Serve.main`).
if CommandLine.arguments.dropFirst().first == "serve" { Serve.main(Array(CommandLine.arguments.dropFirst(2))) }

// Ctrl-C at a terminal reaches the whole process group: the run decides when this ends.
signal(SIGINT, SIG_IGN)

/// Writes whole lines to stdout, one writer at a time.
final class Output: @unchecked Sendable {
    private let lock = NSLock()

    func write(_ message: InspectorPipe.ToParent) {
        let bytes = Array((InspectorPipe.line(message) + "\n").utf8)
        lock.withLock {
            var done = 0
            while done < bytes.count {
                let n = bytes[done...].withUnsafeBytes { Foundation.write(STDOUT_FILENO, $0.baseAddress, $0.count) }
                if n < 0 { if errno == EINTR { continue }; exit(0) }  // the run is gone
                done += n
            }
        }
    }
}

let output = Output()
guard let settings = InspectorPipe.settings(Array(CommandLine.arguments.dropFirst())),
    let address = try? InspectorPipe.address(settings.address)
else {
    FileHandle.standardError.write(
        Data(
            """
            moonflow-inspector: moonflow run --inspect starts this program beside itself; run that instead \
            (its arguments: --listen HOST:PORT --frames N --bytes B)\n
            """.utf8))
    exit(2)
}

let hub = InspectorHub(
    limits: .init(frames: settings.frames, bytes: settings.bytes),
    rerun: FeatureRun.rerun, advice: { FlagHints.add(to: $0) })
let server = InspectorServer(
    hub: hub, host: address.host, port: address.port, shownBy: "that moonflow run --inspect printed")
do {
    let url = try server.start()
    output.write(.listening(url: url, authorities: server.authorities))
} catch {
    output.write(.failed(message: "\(error)"))
    exit(1)
}

let dispatcher = RemoteDispatcher { output.write($0) }
// The run, line by line, until moonflow closes the pipe (it ended, or died).
var lines = LineSplitter()
var buffer = [UInt8](repeating: 0, count: 1 << 16)
while true {
    let n = buffer.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
    if n < 0 && errno == EINTR { continue }
    if n <= 0 { exit(0) }
    for line in lines.add(buffer[..<n]) {
        guard let message = try? InspectorPipe.toChild(line) else {
            FileHandle.standardError.write(
                Data("moonflow-inspector: \(line.prefix(200)) is not a line of the inspector's pipe protocol\n".utf8))
            continue
        }
        switch message {
        case let .started(name, version, path, actions, clock):
            hub.started(
                RunDescription(
                    name: name, version: version, path: path, actions: InspectorPipe.schema(actions), clock: clock),
                dispatch: dispatcher)
        case let .event(event, t, cause, causeID):
            hub.observe(event, t: t, cause: cause, causeID: causeID)
        case let .input(action, t):
            hub.input(action, t: t)
        case let .answered(answer):
            hub.answered(answer)
        case let .reply(id, message, flights):
            dispatcher.answer(id: id, message: message, flights: flights)
        }
    }
}
