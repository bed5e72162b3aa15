import Foundation
import LuaKit
import MoonflowLua
import Streams
import StreamsTesting

/// One `moonflow run`: loads a plugin, feeds it JSON Lines input on the real
/// or the virtual clock, and prints its events.
///
///     var options = FeatureRun.Options(path: "plugins/counter")
///     options.clock = .virtual
///     options.format = .jsonl
///     let status = FeatureRun(options: options, input: InputLines(file: "in.jsonl")).run()
public final class FeatureRun: @unchecked Sendable {
    public struct Options: Sendable {
        public var path: String
        public var format: OutputFormat = .pretty
        public var clock: FeatureHost.Clock = .real
        public var untilMs: Int?
        public var timeLimitMs: Int64? = 1000
        public var memoryLimitMB: Int? = 512
        public var profile: LuaState.Profile = .trusted
        public var color = false
        /// Reload on every change to the plugin's files, and run until SIGINT or SIGTERM (real clock).
        public var watch = false
        public init(path: String) { self.path = path }
    }

    let options: Options
    let input: InputLines
    let write: @Sendable (String) -> Void
    private let printer: EventPrinter
    var failed = false
    let lock = NSLock()
    private var start = Date()

    /// - Parameters:
    ///   - input: the action lines (a file, standard input, or nothing).
    ///   - write: where lines go (standard output by default).
    public init(options: Options, input: InputLines, write: @escaping @Sendable (String) -> Void = FeatureRun.stdout) {
        self.options = options
        self.input = input
        self.write = write
        self.printer = EventPrinter(format: options.format, color: options.color)
    }

    public static let stdout: @Sendable (String) -> Void = { line in
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    var host: FeatureHost!
    var feature: RunningFeature!
    var watcher: FileWatcher?
    var signalSources: [DispatchSourceSignal] = []

    private var now: Int {
        if let test = host?.testScheduler { return test.now }  // no host yet: an error while making it
        return Int(Date().timeIntervalSince(start) * 1000)
    }

    func emit(_ event: FeatureEvent) {
        lock.lock(); defer { lock.unlock() }
        if case .error = event { failed = true }
        write(printer.render(event, t: now))
    }

    private func inputError(_ message: String, line: Int) {
        emit(.error(message: message, location: "\(input.name):\(line)"))
    }

    /// Runs to the end of input and of all work (or `untilMs`).
    /// - Returns: 0 when nothing failed, 1 after a script error or a bad input line.
    public func run() -> Int32 {
        do {
            host = try FeatureHost(configuration: .init(
                searchPaths: FeatureRun.searchPaths(for: options.path), profile: options.profile,
                timeLimitMs: options.timeLimitMs, memoryLimitMB: options.memoryLimitMB, clock: options.clock))
            // A plugin's print becomes a log event, so jsonl output stays one JSON object per line.
            try host.lua.setGlobal("print", .function { [unowned self] args in
                let text = (0..<args.count).map { i in (try? args.value(i + 1).printed) ?? "<\(args.typeName(i + 1))>" }
                self.emit(.log(message: text.joined(separator: "\t"), location: args.callerLocation))
                return []
            })
            // os.exit is an error and io.write a log event: the host owns the process and stdout.
            try HostOwnedProcess.install(in: host.lua, command: "run") { [unowned self] text, location in
                self.emit(.log(message: text, location: location))
            }
            feature = try host.load(options.path)
        } catch {
            let (message, location) = FeatureErrors.describe(error, fallback: nil)
            emit(.error(message: message, location: location))
            return 1
        }
        start = Date()
        if options.watch { installSignalHandlers() }
        host.perform {
            feature.outlet.add { [unowned self] event in self.emit(event) }
            feature.start()
        }
        if options.watch {
            do { try startWatching() } catch {
                emit(.error(message: "\(error)", location: nil))
                return 1
            }
        }
        switch options.clock {
        case .virtual: runVirtual()
        case .real: runReal()
        }
        return failed ? 1 : 0
    }

    /// Plugins beside PATH are found by name (`mf.compose` children, interactors).
    /// Kept relative when PATH is, so `file:line` in messages and tracebacks
    /// reads the same on every checkout (golden outputs depend on it).
    static func searchPaths(for path: String) -> [String] {
        var parent = (path as NSString).deletingLastPathComponent
        if path.hasSuffix(".lua") { parent = (parent as NSString).deletingLastPathComponent }
        return parent.isEmpty ? ["plugins"] : [parent, "plugins"]
    }

    // MARK: - Virtual clock

    private func runVirtual() {
        let test = host.testScheduler!
        host.settle()
        var lineNumber = 0
        while let line = input.next() {
            lineNumber += 1
            guard let (at, action) = parse(line, lineNumber) else { continue }
            if let at {
                if let until = options.untilMs, at > until { host.advance(to: until); return }
                if at > test.now { host.advance(to: at) }
            }
            send(action, line: lineNumber)
            host.settle()
        }
        // Input is exhausted: run until nothing is scheduled or in flight.
        host.runUntilIdle(until: options.untilMs)
    }

    // MARK: - Real clock

    private func runReal() {
        var lineNumber = 0
        while let line = input.next() {
            lineNumber += 1
            guard let (at, action) = parse(line, lineNumber) else { continue }
            if let at {
                if let until = options.untilMs, at > until { waitIdle(until: until); return }
                let due = start.addingTimeInterval(Double(at) / 1000)
                if due > Date() { Thread.sleep(until: due) }
            }
            send(action, line: lineNumber)
            if input.isInteractive { waitIdle(until: nil, maxSeconds: 2) }
        }
        if options.watch { waitForSignal() }
        waitIdle(until: options.untilMs)
    }

    private func waitIdle(until: Int?, maxSeconds: Double? = nil) {
        let limit = maxSeconds.map { Date().addingTimeInterval($0) }
        while true {
            if let until, now >= until { return }
            if let limit, Date() > limit { return }
            let idle = host.perform { feature.isIdle } && host.bridge.pending.inFlight == 0
            if idle { return }
            Thread.sleep(forTimeInterval: 0.002)
        }
    }

    // MARK: - Input

    /// Parses a line: `{"type":...}`, `{"at": ms, "send": {...}}` or the shorthand `query text=hello`.
    private func parse(_ line: String, _ n: Int) -> (Int?, LuaValue)? {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty { return nil }
        if input.isInteractive, trimmed.hasPrefix(":") {
            promptCommand(trimmed)
            return nil
        }
        let value: LuaValue
        if trimmed.hasPrefix("{") {
            do { value = try LuaValue(json: trimmed) } catch {
                inputError("malformed JSON: \(error); each line is an action like {\"type\":\"inc\"} or {\"at\":250,\"send\":{...}}", line: n)
                return nil
            }
        } else if input.allowsShorthand {
            value = InputLines.shorthand(trimmed)
        } else {
            inputError("not a JSON object: each line is an action like {\"type\":\"inc\"} or {\"at\":250,\"send\":{...}}", line: n)
            return nil
        }
        if let send = value["send"] {
            guard case .integer(let at)? = value["at"], at >= 0 else {
                inputError("a timed line needs \"at\": a whole number of milliseconds, as in {\"at\":250,\"send\":{...}}", line: n)
                return nil
            }
            return (Int(at), send)
        }
        if value["at"] != nil {
            inputError("a line with \"at\" needs \"send\": the action to send then", line: n)
            return nil
        }
        return (nil, value)
    }

    private func send(_ action: LuaValue, line: Int) {
        do {
            try host.perform { try feature.send(action) }
        } catch {
            inputError(String(describing: error), line: line)
        }
    }
}

/// Lines of input: a file, standard input, or none.
public final class InputLines: @unchecked Sendable {
    /// Named in error locations (`actions.jsonl:3`, `stdin:3`).
    public let name: String
    /// A person typing at a prompt (shorthand allowed, a prompt is shown).
    public let isInteractive: Bool
    let allowsShorthand: Bool
    private var lines: IndexingIterator<[String]>?
    private let readLine: (() -> String?)?

    /// Every line of a file.
    public init(file path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path), let data = try handle.readToEnd() ?? Data() as Data? else {
            throw HostError("cannot read actions file \(path): it does not exist or is not readable")
        }
        name = path
        isInteractive = false
        allowsShorthand = false
        lines = String(decoding: data, as: UTF8.self).components(separatedBy: "\n").makeIterator()
        readLine = nil
    }

    /// Standard input, read as it comes; `prompt` shows a prompt first (a terminal).
    public init(standardInput prompt: Bool) {
        name = "stdin"
        isInteractive = prompt
        allowsShorthand = prompt
        readLine = {
            if prompt { FileHandle.standardOutput.write(Data("> ".utf8)) }
            return Swift.readLine(strippingNewline: true)
        }
    }

    /// Lines from `next` (nil ends the input), as if typed at the prompt when
    /// `interactive` (shorthand and `:` commands allowed).
    public init(interactive: Bool, name: String = "input", next: @escaping () -> String?) {
        self.name = name
        isInteractive = interactive
        allowsShorthand = interactive
        readLine = next
    }

    /// No input at all.
    public init() {
        name = "input"
        isInteractive = false
        allowsShorthand = false
        lines = [String]().makeIterator()
        readLine = nil
    }

    func next() -> String? {
        if let readLine { return readLine() }
        return lines?.next()
    }

    /// `query text=hello n=3 on=true` -> `{ type = "query", text = "hello", n = 3, on = true }`.
    static func shorthand(_ line: String) -> LuaValue {
        var parts = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        var t = LuaTable()
        t["type"] = .string(LuaString(parts.removeFirst()))
        for part in parts {
            guard let eq = part.firstIndex(of: "=") else { t[part] = true; continue }
            let key = String(part[..<eq])
            let raw = String(part[part.index(after: eq)...])
            if let i = Int64(raw) { t[key] = .integer(i) }
            else if let d = Double(raw), raw.contains(".") { t[key] = .number(d) }
            else if raw == "true" || raw == "false" { t[key] = .boolean(raw == "true") }
            else if raw.hasPrefix("\"") && raw.hasSuffix("\"") && raw.count >= 2 { t[key] = .string(LuaString(String(raw.dropFirst().dropLast()))) }
            else { t[key] = .string(LuaString(raw)) }
        }
        return .table(t)
    }
}

extension LuaValue {
    /// As Lua's `print` shows a value: strings bare, everything else as `description`.
    var printed: String {
        if case .string(let s) = self { return s.description }
        return description
    }
}
