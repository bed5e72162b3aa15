import Foundation
import LuaKit

/// What an editor reads of a stopped Lua thread. `LuaSlots` answers for the Lua code that
/// called a Swift function; a hook's thread will answer the same way.
package protocol StoppedThread {
    func frames(from level: Int, limit: Int) -> [LuaFrame]
    func variables(_ kind: LuaVariableKind, level: Int, holder: LuaRef) throws -> [LuaVariable]
    func fields(of ref: Int, holder: LuaRef) throws -> [LuaVariable]
    func evaluate(_ expression: String, level: Int, holder: LuaRef) throws -> LuaVariable
}

extension LuaSlots: StoppedThread {}

/// The debugger's side of a run: the breakpoints the editor set, and the stop. A Lua thread
/// that stops calls `stop(_:reason:)` on its own thread and waits there; meanwhile the
/// editor's reads (frames, variables, evaluate) are run on that thread, one at a time, and
/// `continue` (or the editor going away) lets it go on.
///
///     let controller = DebugController(holder: try lua.makeTable([]))
///     listener.start { DAPSession(connection: $0, target: controller).run() }
///     // on the Lua thread, at a breakpoint:
///     controller.stop(slots, reason: "breakpoint")
package final class DebugController: DebugTarget, @unchecked Sendable {
    /// Where tables shown to the editor are kept while it may open them.
    private let holder: LuaRef
    private let lock = NSCondition()
    private var breakpoints: [String: [BreakpointRequest]] = [:]
    private var filters: Set<ExceptionFilter> = [.uncaught]
    private var configured = false
    private var attached = true
    /// Reads waiting to run on the stopped thread; nil while nothing is stopped.
    private var pending: [(any StoppedThread) -> Void]?
    private var resumed = false
    private weak var session: DAPSession?
    /// The editor's thread id for the one Lua thread this run has.
    private let threadID = 1
    private let threadName: String

    /// Where scope references start: below are tables in `holder`, from here a frame's
    /// locals (even) or upvalues (odd).
    static let scopeBase = 1 << 30

    package init(holder: LuaRef, name: String = "main") {
        self.holder = holder
        self.threadName = name
    }

    /// The session that `stopped` events go to.
    package func attach(_ session: DAPSession) { lock.withLock { self.session = session; attached = true } }

    // MARK: DebugTarget

    package func threads() -> [DebugThread] { [DebugThread(id: threadID, name: threadName)] }

    package func setBreakpoints(path: String, _ requested: [BreakpointRequest]) -> [PlacedBreakpoint] {
        lock.withLock { breakpoints[Self.normalized(path)] = requested }
        return requested.map { PlacedBreakpoint(line: $0.line) }
    }

    package func setExceptionFilters(_ filters: Set<ExceptionFilter>) { lock.withLock { self.filters = filters } }

    package func configurationDone() {
        lock.withLock { configured = true; lock.broadcast() }
    }

    package func detach() {
        lock.withLock {
            attached = false
            breakpoints = [:]
            resumed = true
            lock.broadcast()
        }
    }

    /// The breakpoints set in `path`, as the editor asked for them.
    package func breakpoints(in path: String) -> [BreakpointRequest] {
        lock.withLock { breakpoints[Self.normalized(path)] ?? [] }
    }

    /// Waits until the editor has sent its breakpoints (`--debug-wait`) or went away.
    package func waitForConfiguration() {
        lock.withLock { while !configured && attached { lock.wait() } }
    }

    // MARK: The stop

    /// Stops the calling Lua thread: tells the editor (`stopped`, with `reason`), then runs
    /// the editor's reads here until it says continue or goes away.
    package func stop(_ thread: any StoppedThread, reason: String, description: String? = nil) {
        let session: DAPSession? = lock.withLock {
            guard attached else { return nil }
            pending = []
            resumed = false
            return self.session
        }
        guard let session else { return }
        var body: [String: LuaValue] = ["reason": LuaValue(reason), "threadId": LuaValue(threadID), "allThreadsStopped": true]
        if let description { body["description"] = LuaValue(description) }
        session.send(event: "stopped", body: LuaValue(body))
        while true {
            let work: [(any StoppedThread) -> Void] = lock.withLock {
                while pending?.isEmpty != false && !resumed { lock.wait() }
                if resumed, pending?.isEmpty != false { pending = nil; return [] }
                defer { pending = [] }
                return pending ?? []
            }
            if work.isEmpty { break }
            for read in work { read(thread) }
        }
        session.send(event: "continued", body: ["threadId": LuaValue(threadID), "allThreadsContinued": true])
    }

    /// Lets a stopped thread go on.
    package func resume() -> Bool {
        lock.withLock {
            guard pending != nil else { return false }
            resumed = true
            lock.broadcast()
            return true
        }
    }

    /// Runs `read` on the stopped thread and returns what it gives; nil when nothing is stopped.
    package func onStopped<T>(_ read: @escaping (any StoppedThread) throws -> T) -> Result<T, any Error>? {
        let box = ResultBox<T>()
        let queued: Bool = lock.withLock {
            guard pending != nil, !resumed else { return false }
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
        if reference >= Self.scopeBase {
            let offset = reference - Self.scopeBase
            return try thread.variables(offset % 2 == 0 ? .locals : .upvalues, level: offset / 2, holder: holder)
        }
        return try thread.fields(of: reference, holder: holder)
    }

    package func evaluate(_ expression: String, frame level: Int, on thread: any StoppedThread) throws -> LuaVariable {
        try thread.evaluate(expression, level: level, holder: holder)
    }

    /// A path as breakpoints are kept by: `./plugins/a.lua` and `plugins/a.lua` are one file.
    static func normalized(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.path
    }
}

/// One answer handed from the stopped thread to the session's thread.
private final class ResultBox<T>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: Result<T, any Error>?
    func set(_ value: Result<T, any Error>) { result = value; done.signal() }
    func wait() -> Result<T, any Error> { done.wait(); return result! }
}
