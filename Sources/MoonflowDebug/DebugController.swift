import Foundation
import LuaKit

/// What an editor reads of a stopped Lua thread. `LuaSlots` answers for the Lua code that
/// called a Swift function; `HookedThread` for a thread stopped in the debugger's hook.
package protocol StoppedThread {
    func frames(from level: Int, limit: Int) -> [LuaFrame]
    func variables(_ kind: LuaVariableKind, level: Int, holder: LuaRef) throws -> [LuaVariable]
    func fields(of ref: Int, holder: LuaRef) throws -> [LuaVariable]
    func evaluate(_ expression: String, level: Int, holder: LuaRef) throws -> LuaVariable
    /// An expression's value, keeping no table (a condition's, a log point's).
    func evaluate(_ expression: String, level: Int) throws -> LuaVariable
    /// Lets go of every table shown from `holder`: the thread goes on, and their refs with it.
    func releaseShown(holder: LuaRef) throws
}

extension LuaSlots: StoppedThread {}

/// The debugger's side of a run: the breakpoints the editor set, and the stop. A Lua state
/// the controller serves (`serve(_:)`) stops in its hook at a breakpoint, a step's end, a
/// pause or an error, on its own thread, and waits there; meanwhile the editor's reads
/// (frames, variables, evaluate) are run on that thread, one at a time, and `continue`,
/// a step (or the editor going away) lets it go on.
///
///     let controller = DebugController(holder: try lua.makeTable([]))
///     controller.serve(lua)
///     listener.start { DAPSession(connection: $0, target: controller).run() }
package final class DebugController: DebugTarget, @unchecked Sendable {
    /// Where tables shown to the editor are kept while it may open them: the stopped
    /// state's (each served state has one).
    private var holder: LuaRef? { lock.withLock { activeHolder } }
    private var activeHolder: LuaRef?
    private var holders: [ObjectIdentifier: LuaRef] = [:]
    private let lock = NSCondition()
    /// Held while what the editor set is changed and given to the served states, and while a
    /// state is served: a state served as the editor changes its filters gets the newest, not
    /// the ones it read before the change (a caught error it then ran past).
    private let applying = NSLock()
    /// The breakpoints by file as the editor asked for them, and as placed (on lines with code).
    private var asked: [String: [BreakpointRequest]] = [:]
    private var breakpoints: [String: [BreakpointRequest]] = [:]
    /// Hits so far of each breakpoint (by file and line), for hit conditions.
    private var hits: [String: Int] = [:]
    private var filters: Set<ExceptionFilter> = []
    /// The last breakpoint id given.
    private var lastID = 0
    private var configured = false
    private var attached = true
    /// Copies opened at a step (`open(copy:at:)`) not stopped yet: what their stop says.
    private var openings: [ObjectIdentifier: String] = [:]
    /// The states served as such copies: a stop in one cannot go back.
    private var copies: Set<ObjectIdentifier> = []
    /// Held by a thread while it is stopped: a second thread that reaches a stop (the live run
    /// while a copy of it is stopped) waits until the first goes on, as the editor follows one.
    private let stopping = NSRecursiveLock()
    /// Reads waiting to run on the stopped thread; nil while nothing is stopped.
    private var pending: [(any StoppedThread) -> Void]?
    private var resumed: LuaResume?
    private weak var session: DAPSession?
    /// The Lua states served: each gets the breakpoints as the editor changes them.
    private var states: [WeakState] = []
    /// The editor's thread id for the one Lua thread this run has.
    private let threadID = 1
    private let threadName: String
    /// Where log points print when no editor is there to show them.
    private let log: @Sendable (String) -> Void
    /// Going back (`DebugTravel`): how the run is repeated, where the stopped thread is, and
    /// the journey under way.
    private var travel = DebugTravel()

    /// Where scope references start: below are tables in `holder`, from here a frame's
    /// locals (even) or upvalues (odd).
    static let scopeBase = 1 << 30

    /// - Parameters:
    ///   - holder: for stops through `stop(_:reason:)` (a state not served): a table of its state.
    ///   - log: where log points print while no editor is attached.
    package init(holder: LuaRef? = nil, name: String = "main", log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.activeHolder = holder
        self.threadName = name
        self.log = log
    }

    /// The session that `stopped` events go to.
    package func attach(_ session: DAPSession) {
        lock.withLock {
            self.session = session; attached = true
        }
    }

    /// Serves `lua` from now on: its hook stops at the editor's breakpoints, steps and
    /// pauses, and at errors when the editor asked. On the state's thread, between calls.
    @discardableResult
    package func serve(_ lua: LuaState) -> Bool {
        guard let holder = try? lua.makeTable([]),
            lua.startDebugging({ [weak self] stop in self?.stopped(stop) })
        else { return false }
        applying.lock(); defer { applying.unlock() }
        let (files, errors) = lock.withLock {
            states.removeAll { $0.state == nil }
            states.append(WeakState(state: lua))
            holders = holders.filter { id, _ in states.contains { $0.state.map(ObjectIdentifier.init) == id } }
            holders[ObjectIdentifier(lua)] = holder
            copies.remove(ObjectIdentifier(lua))  // a freed copy's address, reused by this state
            return (breakpoints, filters)
        }
        for (path, requested) in files { lua.setBreakpointLines(path: path, lines: requested.map(\.line)) }
        Self.apply(errors, to: lua)
        let (repeatable, journey) = lock.withLock { () -> (Bool, DebugTravel.Journey?) in
            guard travel.rerun != nil else { return (false, nil) }
            // A re-run counts the breakpoints' hits again from the load, as the first run did.
            if travel.journey != nil { hits = [:] }
            return (true, travel.journey)
        }
        if repeatable {
            lua.countLines(true)
            if let journey {
                lua.seek(to: journey.seekTo, mark: journey.mark, depth: journey.depth, entry: journey.seeksEntry)
            }
        }
        return true
    }

    private var served: [LuaState] { lock.withLock { states.compactMap(\.state) } }

    // MARK: DebugTarget

    package func threads() -> [DebugThread] { [DebugThread(id: threadID, name: threadName)] }

    package func setBreakpoints(path: String, _ requested: [BreakpointRequest]) -> [PlacedBreakpoint] {
        let file = Self.normalized(path)
        applying.lock(); defer { applying.unlock() }
        let requested = lock.withLock {
            requested.map { request in
                lastID += 1
                return request.numbered(lastID)
            }
        }
        let (placed, answers) = Self.place(requested, in: file)
        lock.withLock {
            asked[file] = requested
            breakpoints[file] = placed
            hits = hits.filter { !$0.key.hasPrefix(file + ":") }
        }
        for lua in served { lua.setBreakpointLines(path: file, lines: placed.map(\.line)) }
        return answers
    }

    /// Places every file's breakpoints again from the lines the editor asked for: after a
    /// reload, a breakpoint lands on the line with code at or after its line in the new text.
    package func filesChanged() {
        applying.lock(); defer { applying.unlock() }
        let files = lock.withLock { asked }
        for (file, requested) in files {
            let (placed, _) = Self.place(requested, in: file)
            lock.withLock { breakpoints[file] = placed }
            for lua in served { lua.setBreakpointLines(path: file, lines: placed.map(\.line)) }
        }
    }

    /// Where each breakpoint lands in `file`: the first line with code at or after the one
    /// asked for (a comment, a blank line or `local function f(x)` has none of its own to stop
    /// at). A file that cannot be read or compiled keeps the lines as asked.
    static func place(_ requested: [BreakpointRequest], in file: String) -> ([BreakpointRequest], [PlacedBreakpoint]) {
        let code = ActiveLines.of(file: file)
        let lines = code.lines.union(code.closingOnly).sorted()
        guard !lines.isEmpty else { return (requested, requested.map { PlacedBreakpoint(line: $0.line, id: $0.id) }) }
        var placed: [BreakpointRequest] = []
        let answers = requested.map { request -> PlacedBreakpoint in
            guard let line = lines.first(where: { $0 >= request.line }) else {
                return PlacedBreakpoint(
                    line: nil,
                    message:
                        "no code at or after line \(request.line) of \(URL(fileURLWithPath: file).lastPathComponent)",
                    id: request.id)
            }
            placed.append(
                BreakpointRequest(
                    line: line, condition: request.condition, hitCondition: request.hitCondition,
                    logMessage: request.logMessage, id: request.id))
            return PlacedBreakpoint(line: line, id: request.id)
        }
        return (placed, answers)
    }

    package func setExceptionFilters(_ filters: Set<ExceptionFilter>) {
        applying.lock(); defer { applying.unlock() }
        lock.withLock { self.filters = filters }
        for lua in served { Self.apply(filters, to: lua) }
    }

    /// `all` stops at every error, caught or not; `uncaught` at those the run reports.
    private static func apply(_ filters: Set<ExceptionFilter>, to lua: LuaState) {
        lua.stopOnErrors(uncaught: !filters.isEmpty, caught: filters.contains(.all))
    }

    package func configurationDone() {
        lock.withLock {
            configured = true; lock.broadcast()
        }
    }

    package func detach() {
        applying.lock(); defer { applying.unlock() }
        let files: [String] = lock.withLock {
            attached = false
            defer { breakpoints = [:]; asked = [:]; filters = [] }
            if pending != nil { resumed = .run }
            lock.broadcast()
            return Array(breakpoints.keys)
        }
        for lua in served {
            for file in files { lua.setBreakpointLines(path: file, lines: []) }
            lua.stopOnErrors(uncaught: false, caught: false)
        }
    }

    /// Waits until the editor has sent its breakpoints (`--debug-wait`) or went away.
    package func waitForConfiguration() {
        lock.withLock { while !configured && attached { lock.wait() } }
    }

    // MARK: The stop

    /// A stop in a served state's hook: a breakpoint weighs its condition, hit condition
    /// and log message first. Returns what the thread does next; nil when it does not stop.
    private func stopped(_ stop: LuaStop) -> LuaResume? {
        let thread = HookedThread(stop.thread)
        // Only a state this controller serves stops (its holder keeps what the editor opens).
        guard
            lock.withLock({ () -> LuaRef? in
                activeHolder = holders[ObjectIdentifier(stop.thread.state)]
                return activeHolder
            }) != nil
        else { return nil }
        let journey = lock.withLock { travel.journey }
        if let journey {
            switch stop.reason {
            case .mark: return markReached(stop, journey)
            case .arrived: return arrived(stop, thread, journey)
            case .breakpoint: break  // weighed and counted, as the first run did; nothing stops
            default: return nil
            }
        }
        switch stop.reason {
        case .mark, .arrived: return nil
        case .breakpoint:
            guard let top = thread.shown.first,
                let (file, request) = breakpoint(at: top.source, line: stop.line)
            else { return nil }
            if let condition = request.condition, !condition.isEmpty {
                guard let value = try? thread.evaluate(condition, level: 1),
                    value.type != "nil", value.text != "false"
                else { return nil }
            }
            let count: Int = lock.withLock {
                hits["\(file):\(request.line)", default: 0] += 1
                return hits["\(file):\(request.line)"]!
            }
            if let hitCondition = request.hitCondition, !Self.hitMatches(hitCondition, count) { return nil }
            if journey != nil {
                // On the way back: a hit that would stop is where reverseContinue may go.
                if request.logMessage?.isEmpty != false {
                    lock.withLock { travel.hit(stop.count, trail: stop.trail) }
                }
                return nil
            }
            if let message = request.logMessage, !message.isEmpty {  // an empty one stops, as the protocol says
                let line = interpolated(message, on: thread)
                output(line + "\n")
                return nil
            }
            return self.stop(thread, reason: "breakpoint", breakpoint: request.id, at: stop)
        case .step: return self.stop(thread, reason: "step", at: stop)
        case .pause:
            // A copy opened at a step (`open(copy:at:)`) stops there as the editor asked for it.
            if let label = lock.withLock({ openings.removeValue(forKey: ObjectIdentifier(stop.thread.state)) }) {
                return self.stop(thread, reason: "goto", description: label, at: stop)
            }
            return self.stop(thread, reason: "pause", at: stop)
        case .error(let message): return self.stop(thread, reason: "exception", description: message, at: stop)
        }
    }

    /// The re-run reached the point the editor went back from: where it goes is now known
    /// (the line before, or the last breakpoint hit before), and the run is repeated once more
    /// to stop there.
    /// A re-run that reached the mark by another path is not the run: it stops there, saying so.
    private func markReached(_ stop: LuaStop, _ journey: DebugTravel.Journey) -> LuaResume? {
        if stop.trail != journey.markTrail {
            lock.withLock { travel.journey = nil }
            return self.stop(
                HookedThread(stop.thread), reason: "exception", description: DebugTravel.diverged(at: stop.count),
                at: stop)
        }
        let found = stop.thread.state.foundBeforeMark
        let rerun: (@Sendable () -> Void)? = lock.withLock {
            travel.marked(found: found.count, trail: found.trail)
            return travel.rerun
        }
        rerun?()
        return .travel
    }

    /// The re-run is where the editor went back to: a stop as any other, with the hit of a
    /// breakpoint on the line counted as the first run counted it.
    private func arrived(_ stop: LuaStop, _ thread: HookedThread, _ journey: DebugTravel.Journey) -> LuaResume? {
        lock.withLock { travel.journey = nil }
        if let expected = journey.seekTrail, stop.trail != expected {
            return self.stop(thread, reason: "exception", description: DebugTravel.diverged(at: stop.count), at: stop)
        }
        var id: Int?
        if let top = thread.shown.first, let (file, request) = breakpoint(at: top.source, line: stop.line),
            request.logMessage?.isEmpty != false
        {
            let holds =
                request.condition.map { condition in
                    condition.isEmpty
                        || (try? thread.evaluate(condition, level: 1)).map { $0.type != "nil" && $0.text != "false" }
                            == true
                } ?? true
            if holds {
                lock.withLock { hits["\(file):\(request.line)", default: 0] += 1 }
                id = request.id
            }
        }
        if journey.reason == "breakpoint", id == nil {
            return self.stop(thread, reason: "step", at: stop)
        }
        return self.stop(
            thread, reason: journey.reason, breakpoint: journey.reason == "breakpoint" ? id : nil, at: stop)
    }

    /// The breakpoint at `line` of the chunk named `source` (relative or absolute), by file.
    private func breakpoint(at source: String, line: Int) -> (String, BreakpointRequest)? {
        var name = source
        while name.hasPrefix("./") { name.removeFirst(2) }
        // A name with a `..` step (`moonflow run ../app/plugins/a`) names its file from here.
        if name.hasPrefix("../") || name.contains("/../") { name = Self.normalized(name) }
        return lock.withLock {
            for (file, requested) in breakpoints where file == name || file.hasSuffix("/" + name) {
                if let request = requested.first(where: { $0.line == line }) { return (file, request) }
            }
            return nil
        }
    }

    /// A log point's text with each `{expression}` replaced by its value.
    private func interpolated(_ message: String, on thread: any StoppedThread) -> String {
        var out = ""
        var rest = Substring(message)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            out += rest[..<open]
            let expression = String(rest[rest.index(after: open)..<close])
            if let value = try? thread.evaluate(expression, level: 1) {
                out += value.type == "string" ? String(value.text.dropFirst().dropLast()) : value.text
            } else {
                out += "{\(expression)}"
            }
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }

    /// Whether the `count`th hit matches an editor's hit condition: `N` or `>= N` (from the
    /// Nth on), `> N`, `== N`, `% N` (every Nth).
    static func hitMatches(_ condition: String, _ count: Int) -> Bool {
        let text = condition.trimmingCharacters(in: .whitespaces)
        for (prefix, test) in [
            (">=", { (n: Int) in count >= n }), ("==", { count == $0 }), (">", { count > $0 }),
            ("%", { $0 > 0 && count % $0 == 0 }), ("", { count >= $0 }),
        ] as [(String, (Int) -> Bool)] {
            guard text.hasPrefix(prefix), let n = Int(text.dropFirst(prefix.count).trimmingCharacters(in: .whitespaces))
            else { continue }
            return test(n)
        }
        return true  // a condition it cannot read: it stops, as with none
    }

    private func output(_ text: String) {
        let session = lock.withLock { attached ? self.session : nil }
        if let session {
            session.send(event: "output", body: ["category": "console", "output": LuaValue(text)])
        } else {
            log(text)
        }
    }

    /// Stops the calling Lua thread: tells the editor (`stopped`, with `reason`), then runs
    /// the editor's reads here until it says continue or step, or goes away.
    @discardableResult
    package func stop(
        _ thread: any StoppedThread, reason: String, description: String? = nil, breakpoint: Int? = nil,
        at position: LuaStop? = nil
    ) -> LuaResume {
        stopping.lock()
        defer { stopping.unlock() }
        let session: DAPSession? = lock.withLock {
            guard attached else { return nil }
            pending = []
            resumed = nil
            travel.stopped = position.map { stop in
                let levels = (thread as? HookedThread)?.levels ?? []
                return DebugTravel.Position(
                    count: stop.count, depth: stop.depth, trail: stop.trail,
                    frameDepths: levels.map { stop.depth - $0 },
                    inCopy: copies.contains(ObjectIdentifier(stop.thread.state)))
            }
            return self.session
        }
        guard let session else { return .run }
        var body: [String: LuaValue] = [
            "reason": LuaValue(reason), "threadId": LuaValue(threadID), "allThreadsStopped": true,
        ]
        if let description { body["description"] = LuaValue(description); body["text"] = LuaValue(description) }
        if let breakpoint { body["hitBreakpointIds"] = LuaValue([LuaValue(breakpoint)]) }
        session.send(event: "stopped", body: LuaValue(body))
        var next = LuaResume.run
        while true {
            let work: [(any StoppedThread) -> Void] = lock.withLock {
                while pending?.isEmpty != false && resumed == nil { lock.wait() }
                if let mode = resumed, pending?.isEmpty != false { pending = nil; next = mode; return [] }
                defer { pending = [] }
                return pending ?? []
            }
            if work.isEmpty { break }
            for read in work { read(thread) }
        }
        // What the editor opened is kept while it is stopped, and let go as it goes on: a
        // breakpoint hit a hundred thousand times keeps nothing from the hits before.
        if let holder { try? thread.releaseShown(holder: holder) }
        let rerun = lock.withLock {
            travel.stopped = nil
            return next == .travel ? travel.rerun : nil
        }
        session.send(event: "continued", body: ["threadId": LuaValue(threadID), "allThreadsContinued": true])
        rerun?()
        return next
    }

    // MARK: Going back

    /// Makes going back possible: `rerun` abandons the run (called on the stopped Lua thread,
    /// before the error that unwinds it is raised) and runs it again from its load with the same
    /// inputs, each Lua state it makes served here (`serve(_:)`). Before any state is served.
    /// `sources`: the files the run loads, looked at again before each way back.
    package func repeats(by rerun: @escaping @Sendable () -> Void, loading sources: LoadedSources? = nil) {
        lock.withLock {
            travel.rerun = rerun
            travel.sources = sources
        }
    }

    /// The run can no longer go back (`why` says so to each request that would), from here on.
    /// On the run's Lua thread, between calls: its states stop counting lines.
    package func stopsRepeating(because why: String) {
        lock.withLock {
            travel.rerun = nil
            travel.refusal = why
        }
        for lua in served { lua.countLines(false) }
    }

    /// Whether the run can go back: the editor's frames say they can be restarted.
    package var canGoBack: Bool { lock.withLock { travel.rerun != nil && travel.stopped?.inCopy != true } }

    /// Why this run cannot go back (the refusal of `stepBack` and `reverseContinue`), instead
    /// of the default (`DebugTravel.notRepeatable`).
    package func cannotRepeat(because why: String) {
        lock.withLock { travel.refusal = why }
    }

    /// Whether an editor is attached, to stop for.
    package var hasEditor: Bool { lock.withLock { attached && session != nil } }

    /// Serves `lua`, a copy of the run made to show a past step (the inspector's "open in the
    /// debugger", `FeatureRun.openStep`), and stops it at the next line of a plugin's file it
    /// runs, telling the editor `label` with the `goto` reason. On the copy's Lua thread,
    /// between calls, as its action is about to be sent.
    package func open(copy lua: LuaState, at label: String) {
        guard serve(lua) else { return }
        lock.withLock {
            openings[ObjectIdentifier(lua)] = label
            copies.insert(ObjectIdentifier(lua))
        }
        lua.pauseForDebugger()
    }

    /// Goes back from the stop: to the line before (`stepBack`: the last line run at this
    /// depth or outer), or to the last breakpoint hit before (`reverseContinue`). Nil when
    /// nothing is stopped; a failure naming why it cannot.
    package func reverse(_ kind: DebugTravel.Kind) -> Result<Void, DebugTravel.Refusal>? {
        lock.withLock { () -> Result<Void, DebugTravel.Refusal>? in
            guard pending != nil, resumed == nil else { return nil }
            do throws(DebugTravel.Refusal) {
                try travel.start(kind)
            } catch {
                return .failure(error)
            }
            resumed = .travel
            lock.broadcast()
            return .success(())
        }
    }

    /// Lets a stopped thread go on: run, or step in, over or out.
    package func resume(_ mode: LuaResume) -> Bool {
        lock.withLock {
            guard pending != nil else { return false }
            resumed = mode
            lock.broadcast()
            return true
        }
    }

    /// Stops every served state at the next line of a plugin's file it runs.
    package func pause() {
        for lua in served { lua.pauseForDebugger() }
    }

    /// Runs `read` on the stopped thread and returns what it gives; nil when nothing is stopped.
    package func onStopped<T>(_ read: @escaping (any StoppedThread) throws -> T) -> Result<T, any Error>? {
        let box = ResultBox<T>()
        let queued: Bool = lock.withLock {
            guard pending != nil, resumed == nil else { return false }
            pending?.append { thread in
                box.set(Result { try read(thread) })
            }
            lock.broadcast()
            return true
        }
        guard queued else { return nil }
        return box.wait()
    }

    package func stackTrace() -> Result<[LuaFrame], any Error>? {
        onStopped { $0.frames(from: 1, limit: 200) }
    }

    package func variables(_ reference: Int) -> Result<[LuaVariable], any Error>? {
        onStopped { [self] in try variables(reference, on: $0) }
    }

    package func evaluate(_ expression: String, frame level: Int) -> Result<LuaVariable, any Error>? {
        onStopped { [self] in try evaluate(expression, frame: level, on: $0) }
    }

    /// A frame's scopes as the editor names them, by reference.
    package static func scopes(frame level: Int) -> [(name: String, reference: Int)] {
        [("Locals", scopeBase + level * 2), ("Upvalues", scopeBase + level * 2 + 1)]
    }

    /// The variables behind `reference`: a scope's, or a table's fields.
    package func variables(_ reference: Int, on thread: any StoppedThread) throws -> [LuaVariable] {
        guard let holder else { throw DebugReadError.noHolder }
        if reference >= Self.scopeBase {
            let offset = reference - Self.scopeBase
            return try thread.variables(offset % 2 == 0 ? .locals : .upvalues, level: offset / 2, holder: holder)
        }
        return try thread.fields(of: reference, holder: holder)
    }

    package func evaluate(_ expression: String, frame level: Int, on thread: any StoppedThread) throws -> LuaVariable {
        guard let holder else { throw DebugReadError.noHolder }
        return try thread.evaluate(expression, level: level, holder: holder)
    }

    /// A path as breakpoints are kept by: `./plugins/a.lua` and `plugins/a.lua` are one file.
    static func normalized(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.path
    }
}

private struct WeakState {
    weak var state: LuaState?
}

/// A thread stopped in the debugger's hook, as the editor numbers its frames: 1 is the
/// innermost frame of a plugin's (or spec's) file; C functions and Moonflow's own Lua are
/// left out, as the editor never shows them.
struct HookedThread: StoppedThread {
    let slots: LuaSlots
    /// The frames shown, innermost first, and the hook's level of each: read once per stop
    /// (the stack does not move while the thread is stopped).
    let shown: [LuaFrame]
    let levels: [Int]

    init(_ slots: LuaSlots) {
        self.slots = slots
        let visible = slots.frames(from: 0, limit: 200).enumerated().filter { $0.element.isFile }
        shown = visible.map(\.element)
        levels = visible.map(\.offset)
    }

    private func raw(_ level: Int) throws -> Int {
        guard level >= 1, level <= levels.count else { throw DebugReadError.noFrame(level) }
        return levels[level - 1]
    }

    func frames(from level: Int, limit: Int) -> [LuaFrame] {
        Array(shown.dropFirst(max(level - 1, 0)).prefix(max(limit, 0)))
    }
    func variables(_ kind: LuaVariableKind, level: Int, holder: LuaRef) throws -> [LuaVariable] {
        try slots.variables(kind, level: raw(level), holder: holder)
    }
    func fields(of ref: Int, holder: LuaRef) throws -> [LuaVariable] { try slots.fields(of: ref, holder: holder) }
    func evaluate(_ expression: String, level: Int, holder: LuaRef) throws -> LuaVariable {
        try slots.evaluate(expression, level: raw(level), holder: holder)
    }
    func evaluate(_ expression: String, level: Int) throws -> LuaVariable {
        try slots.evaluate(expression, level: raw(level))
    }
    func releaseShown(holder: LuaRef) throws { try slots.releaseShown(holder: holder) }
}

enum DebugReadError: Error, CustomStringConvertible {
    case noFrame(Int)
    case noHolder
    var description: String {
        switch self {
        case .noFrame(let level): "no frame \(level) on the stopped thread's stack"
        case .noHolder: "the stopped thread's state is not served by this debugger"
        }
    }
}

/// One answer handed from the stopped thread to the session's thread.
private final class ResultBox<T>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: Result<T, any Error>?
    func set(_ value: Result<T, any Error>) { result = value; done.signal() }
    func wait() -> Result<T, any Error> { done.wait(); return result! }
}

extension BreakpointRequest {
    /// The same breakpoint with the id `id`.
    func numbered(_ id: Int) -> BreakpointRequest {
        BreakpointRequest(line: line, condition: condition, hitCondition: hitCondition, logMessage: logMessage, id: id)
    }
}
