import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowLua

/// `moonflow run --inspect`'s side of the inspector: starts `moonflow-inspector` beside
/// the running binary, feeds it the run as an observer, and answers its commands
/// (`InspectorPipe` is the protocol).
///
///     let inspector = try InspectorProcess.start(address: "127.0.0.1:0", frames: 10_000, bytes: 64 << 20)
///     print(inspector.url)                  // http://127.0.0.1:40123/?token=…
///     options.observers.append(inspector)
///
/// **Threading:** the observer's calls queue their lines and return; a thread of its own
/// writes them (with SIGPIPE blocked: a child that went away is let go, the run goes on).
/// Another reads the child's commands; each is answered off that thread, as a page's
/// command was answered on its connection's thread when the server ran in this process.
package final class InspectorProcess: RunObserver, @unchecked Sendable {
    /// The page's URL, token included, as the child serves it.
    package let url: String
    /// The `HOST:PORT` names the page answers to.
    package let authorities: [String]

    private let process: Process
    /// Kept: a pipe's handle closes its descriptor when it goes.
    private let toChildHandle: FileHandle
    private var toChild: Int32 { toChildHandle.fileDescriptor }
    private let fromChild: ChildLines
    private let lock = NSCondition()
    private var queued: [String] = []
    private var gone = false
    private var dispatcher: (any RunDispatcher)?

    /// Why the inspector could not start, as `moonflow: --inspect …` prints it.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// Where `moonflow-inspector` is: in the folder of the running binary.
    package static var executable: URL {
        let proc = URL(fileURLWithPath: "/proc/self/exe")
        let own = FileManager.default.fileExists(atPath: proc.path) ? proc.resolvingSymlinksInPath()
            : (Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])).resolvingSymlinksInPath()
        return own.deletingLastPathComponent().appendingPathComponent(InspectorPipe.executableName)
    }

    /// Starts the child and waits until it serves the page (or says why it cannot).
    /// - Throws: `Failure`: the child is missing, or cannot listen at `address`.
    package static func start(address: String, frames: Int, bytes: Int) throws -> InspectorProcess {
        let binary = executable
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw Failure(description: "needs \(InspectorPipe.executableName) beside moonflow, and \(binary.path) is missing; install the two files together")
        }
        let process = Process()
        process.executableURL = binary
        process.arguments = InspectorPipe.arguments(address: address, frames: frames, bytes: bytes)
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        do { try process.run() } catch {
            throw Failure(description: "cannot start \(binary.path): \(error)")
        }
        let reader = ChildLines(output.fileHandleForReading)
        guard let first = reader.next() else {
            throw Failure(description: "\(binary.path) ended before it served the page")
        }
        switch try? InspectorPipe.toParent(first) {
        case .listening(let url, let authorities)?:
            return InspectorProcess(process: process, toChild: input.fileHandleForWriting, fromChild: reader,
                                    url: url, authorities: authorities)
        case .failed(let message)?:
            throw Failure(description: message)
        default:
            throw Failure(description: "\(binary.path) said \(first.prefix(200)) instead of where it serves the page")
        }
    }

    private init(process: Process, toChild: FileHandle, fromChild: ChildLines, url: String, authorities: [String]) {
        self.process = process
        self.toChildHandle = toChild
        self.fromChild = fromChild
        self.url = url
        self.authorities = authorities
        let writer = Thread { [self] in write() }
        writer.name = "moonflow inspector writer"
        writer.start()
        let reader = Thread { [self] in read() }
        reader.name = "moonflow inspector reader"
        reader.start()
    }

    // MARK: - RunObserver

    package func started(_ run: RunDescription, dispatch: any RunDispatcher) {
        lock.withLock { dispatcher = dispatch }
        send(.started(name: run.name, version: run.version, path: run.path, actions: InspectorPipe.declared(run.actions), clock: run.clock))
    }

    package func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?) {
        send(.event(event, t: t, cause: cause))
    }

    package func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?, causeID: String?) {
        send(.event(event, t: t, cause: cause, causeID: causeID))
    }

    package func input(_ action: LuaValue, t: Int) {
        send(.input(action, t: t))
    }

    /// A service call's answer (a recording's `service` line), for the inspector's `rerun`.
    package func answered(_ line: String) {
        send(.answered(line: line))
    }

    // MARK: - The pipes

    private func send(_ message: InspectorPipe.ToChild) {
        let line = InspectorPipe.line(message) + "\n"
        lock.withLock {
            guard !gone else { return }
            queued.append(line)
            lock.signal()
        }
    }

    /// The writer thread: the queued lines, in order, until the child goes away.
    private func write() {
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
        while true {
            let lines: [String] = lock.withLock {
                while queued.isEmpty { lock.wait() }
                defer { queued = [] }
                return queued
            }
            let bytes = Array(lines.joined().utf8)
            var done = 0
            while done < bytes.count {
                let n = bytes[done...].withUnsafeBytes { Foundation.write(toChild, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 {
                    // The child is gone: what it would have shown goes nowhere; the run goes on.
                    lock.withLock { gone = true; queued = [] }
                    return
                }
                done += n
            }
        }
    }

    /// The reader thread: the child's commands, each answered with a `reply`.
    private func read() {
        while let line = fromChild.next() {
            guard let command = try? InspectorPipe.toParent(line) else { continue }
            DispatchQueue.global().async { [self] in answer(command) }
        }
    }

    private func answer(_ command: InspectorPipe.ToParent) {
        let dispatcher = lock.withLock { self.dispatcher }
        let notLoaded = "the feature has not loaded yet; send again once the session frame arrived"
        switch command {
        case .dispatch(let id, let action):
            var message: String?
            do {
                guard let dispatcher else { throw HostError(notLoaded) }
                try dispatcher.dispatch(action)
            } catch { message = "\(error)" }
            send(.reply(id: id, message: message, flights: nil))
        case .restart(let id):
            var message: String?
            do {
                guard let dispatcher else { throw HostError(notLoaded) }
                try dispatcher.restart()
            } catch { message = "\(error)" }
            send(.reply(id: id, message: message, flights: nil))
        case .inFlight(let id):
            send(.reply(id: id, message: nil, flights: (dispatcher?.inFlight ?? []).map(InspectorPipe.Flight.init)))
        case .listening, .failed:
            break
        }
    }

}

/// The lines of a pipe, read a block at a time. Used by one thread at a time.
final class ChildLines: @unchecked Sendable {
    private let handle: FileHandle
    private var pending: [UInt8] = []
    private var block = [UInt8](repeating: 0, count: 1 << 16)

    init(_ handle: FileHandle) { self.handle = handle }

    /// The next line, without its newline; nil at the end.
    func next() -> String? {
        var searched = 0
        while true {
            if let newline = pending[searched...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeFirst(newline + 1)
                return line
            }
            searched = pending.count
            let fd = handle.fileDescriptor
            let n = block.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                defer { pending = [] }
                return pending.isEmpty ? nil : String(decoding: pending, as: UTF8.self)
            }
            pending += block[..<n]
        }
    }
}
