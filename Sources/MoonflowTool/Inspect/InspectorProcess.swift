import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
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
    private var queuedSize = 0
    /// Events dropped since the child last caught up, and in all.
    private var dropped = 0
    private var droppedTotal = 0
    private let queueLimit: Int
    private let warn: @Sendable (String) -> Void
    private var gone = false
    private var dispatcher: (any RunDispatcher)?

    /// Why the inspector could not start, as `moonflow: --inspect …` prints it.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// Where `moonflow-inspector` is: in the folder of the running binary.
    package static var executable: URL {
        let proc = URL(fileURLWithPath: "/proc/self/exe")
        let own =
            FileManager.default.fileExists(atPath: proc.path)
            ? proc.resolvingSymlinksInPath()
            : (Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])).resolvingSymlinksInPath()
        return own.deletingLastPathComponent().appendingPathComponent(InspectorPipe.executableName)
    }

    /// Starts the child and waits until it serves the page (or says why it cannot), at most
    /// `startTimeout`: a child that says nothing is stopped, and so is the wait when SIGINT or
    /// SIGTERM comes (the run holds them: `FeatureRun.holdStopSignals`).
    /// - Parameters:
    ///   - bytes: what the inspector keeps; also how far the child may fall behind (events
    ///     queued for it, not yet written) before they are dropped.
    ///   - binary: the child (`executable` by default).
    ///   - warn: where to say the child fell behind (standard error by default).
    /// - Throws: `Failure`: the child is missing, cannot listen at `address`, says nothing
    ///   within `startTimeout`, or a stop signal came first.
    package static func start(
        address: String, frames: Int, bytes: Int, binary: URL = executable, startTimeout: TimeInterval = 30,
        warn: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
    ) throws -> InspectorProcess {
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw Failure(
                description:
                    "needs \(InspectorPipe.executableName) beside moonflow, and \(binary.path) is missing; install the two files together"
            )
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
        let first: String
        switch reader.first(within: startTimeout) {
        case .line(let line): first = line
        case .ended:
            throw Failure(description: "\(binary.path) ended before it served the page")
        case .timedOut:
            kill(process.processIdentifier, SIGKILL)  // it may hold SIGTERM, as this thread does
            let seconds = startTimeout.rounded() == startTimeout ? "\(Int(startTimeout))" : "\(startTimeout)"
            throw Failure(
                description: "\(binary.path) did not say where it serves the page within \(seconds) s; it was stopped")
        case .signal(let name):
            kill(process.processIdentifier, SIGKILL)  // it may hold SIGTERM, as this thread does
            throw Failure(description: "stopped by \(name) while \(binary.path) was starting")
        }
        switch try? InspectorPipe.toParent(first) {
        case .listening(let url, let authorities)?:
            return InspectorProcess(
                process: process, toChild: input.fileHandleForWriting, fromChild: reader,
                url: url, authorities: authorities, queueLimit: bytes, warn: warn)
        case .failed(let message)?:
            throw Failure(description: message)
        default:
            throw Failure(description: "\(binary.path) said \(first.prefix(200)) instead of where it serves the page")
        }
    }

    private init(
        process: Process, toChild: FileHandle, fromChild: ChildLines, url: String, authorities: [String],
        queueLimit: Int, warn: @escaping @Sendable (String) -> Void
    ) {
        self.process = process
        self.toChildHandle = toChild
        self.fromChild = fromChild
        self.url = url
        self.authorities = authorities
        self.queueLimit = max(1, queueLimit)
        self.warn = warn
        let writer = Thread { [self] in write() }
        writer.name = "moonflow inspector writer"
        writer.start()
        let reader = Thread { [self] in read() }
        reader.name = "moonflow inspector reader"
        reader.start()
    }

    /// The bytes of the lines queued for the child and not yet taken by the writer.
    package var queuedBytes: Int { lock.withLock { queuedSize } }

    /// The events dropped so far because the child fell behind.
    package var droppedEvents: Int { lock.withLock { droppedTotal } }

    // MARK: - RunObserver

    package func started(_ run: RunDescription, dispatch: any RunDispatcher) {
        lock.withLock { dispatcher = dispatch }
        send(
            .started(
                name: run.name, version: run.version, path: run.path, actions: InspectorPipe.declared(run.actions),
                clock: run.clock))
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

    /// Queues a line for the child. Past `queueLimit` bytes queued, an event or input is
    /// dropped (a reply or `started` never is: a page waits for it): the run goes on at its
    /// pace whatever the page does, and the child is told how many went once it caught up.
    private func send(_ message: InspectorPipe.ToChild) {
        let line = InspectorPipe.line(message) + "\n"
        var droppable = true
        if case .reply = message { droppable = false }
        if case .started = message { droppable = false }
        let first = lock.withLock { () -> Bool in
            guard !gone else { return false }
            if droppable, queuedSize + line.utf8.count > queueLimit {
                dropped += 1
                droppedTotal += 1
                return dropped == 1
            }
            queued.append(line)
            queuedSize += line.utf8.count
            lock.signal()
            return false
        }
        if first {
            warn(
                "moonflow: --inspect: the inspector fell \(queueLimit >> 20 > 0 ? "\(queueLimit >> 20) MB" : "\(queueLimit) bytes") behind (a page that does not keep up, a machine too busy); the run's events are dropped until it catches up, and the page is told how many"
            )
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
                defer { queued = []; queuedSize = 0 }
                // Caught up after dropping: the page hears how many it missed, after what was queued.
                if dropped > 0 {
                    let note = InspectorPipe.line(
                        .event(
                            .log(
                                message: "moonflow run dropped \(dropped) events here: the inspector fell behind",
                                location: nil), t: 0, cause: nil))
                    dropped = 0
                    return queued + [note + "\n"]
                }
                return queued
            }
            let bytes = Array(lines.joined().utf8)
            var done = 0
            while done < bytes.count {
                let n = bytes[done...].withUnsafeBytes { Foundation.write(toChild, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 {
                    // The child is gone: what it would have shown goes nowhere; the run goes on.
                    lock.withLock {
                        gone = true; queued = []; queuedSize = 0
                    }
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
        case .debug(let id, let inputs, let answers, let action):
            var message: String?
            do {
                guard let dispatcher else { throw HostError(notLoaded) }
                try dispatcher.openInDebugger(inputLines: inputs, answers: answers, action: action)
            } catch { message = "\(error)" }
            send(.reply(id: id, message: message, flights: nil))
        case .listening, .failed:
            break
        }
    }

}

/// The lines of a pipe, read a block at a time (`LineSplitter`). Used by one thread at a time.
final class ChildLines: @unchecked Sendable {
    private let handle: FileHandle
    private var splitter = LineSplitter()
    private var ready: [String] = []
    private var ended = false
    private var block = [UInt8](repeating: 0, count: 1 << 16)

    init(_ handle: FileHandle) { self.handle = handle }

    /// The next line, without its newline; nil at the end.
    func next() -> String? {
        while ready.isEmpty {
            guard !ended else { return nil }
            readBlock()
        }
        return ready.removeFirst()
    }

    private func readBlock() {
        let fd = handle.fileDescriptor
        let n = block.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { return }
        if n <= 0 {
            ended = true
            if let last = splitter.finish() { ready.append(last) }
            return
        }
        ready += splitter.add(block[..<n])
    }

    enum First {
        case line(String)
        case ended
        case timedOut
        /// SIGINT or SIGTERM is pending (held by the caller's signal mask): its name.
        case signal(String)
    }

    /// The first line, waiting at most `timeout`, and no longer once SIGINT or SIGTERM is pending.
    func first(within timeout: TimeInterval) -> First {
        let deadline = Date().addingTimeInterval(timeout)
        while ready.isEmpty {
            if ended { return .ended }
            var pending = sigset_t()
            sigemptyset(&pending)
            sigpending(&pending)
            if sigismember(&pending, SIGINT) == 1 { return .signal("SIGINT") }
            if sigismember(&pending, SIGTERM) == 1 { return .signal("SIGTERM") }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return .timedOut }
            // A tenth of a second at a time: a held signal does not wake poll.
            var entry = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            if poll(&entry, 1, Int32(min(left, 0.1) * 1000) + 1) > 0 { readBlock() }
        }
        return .line(ready.removeFirst())
    }
}
