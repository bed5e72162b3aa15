import CLua
import CLuaShim
import Foundation

/// One Lua 5.4 state with its budgets, profile and Swift bridge.
///
///     let lua = try LuaState(profile: .trusted, memoryLimit: 64 << 20, timeLimitMs: 1000)
///     let values = try lua.run(string: "return 1 + 1", name: "=demo")   // [.integer(2)]
///
/// **Threading:** a state is used by one thread at a time. It may move between
/// threads (a serial executor), but two threads must never use it at once;
/// debug builds check this and stop with a message. `LuaRef`s may be released
/// from any thread: their registry slots are freed on the state's next use.
public final class LuaState: @unchecked Sendable {
    /// What a script may do.
    public enum Profile: String, Sendable, CaseIterable {
        /// The full standard library (Lua's own test suite passes).
        case trusted
        /// For untrusted plugins: no `os.execute`, `io`, `debug`, `package.loadlib`,
        /// binary chunks or `__gc`; standard library tables are read-only.
        case sandboxed
    }

    let L: OpaquePointer
    /// The state's `mf_budget` (opaque: CLuaShim's accessors read and reset it).
    let budget: OpaquePointer
    public let profile: Profile
    /// Per-call time limit in milliseconds (nil: none).
    public let timeLimitMs: Int64?
    /// Memory limit in bytes (nil: none).
    public let memoryLimit: Int?
    /// Whether the state behaves as the standalone `lua5.4` (`moonflow exec`).
    package let standalone: Bool
    private var closed = false
    /// Held by close() as it marks the state closed and ends the debugger's service, and by
    /// the debugger's calls from other threads (`whileOpen`): none reaches a freed state.
    private let openLock = NSLock()
    /// Unique among the states of this process (refs carry it, see `LuaRef.belongs`).
    let serial: UInt64 = LuaState.nextSerial.withLock {
        $0 += 1; return $0
    }
    private static let nextSerial = SerialCounter()

    private let pendingUnrefs = PendingUnrefs()
    private let confinement = Confinement()
    /// The thread running Swift code right now (a coroutine calling a Swift
    /// function); nested calls use its stack. nil: the main thread.
    var currentThread: OpaquePointer?
    var activeL: OpaquePointer { currentThread ?? L }
    /// A push builder kept between pushes so its buffers are allocated once
    /// (taken while in use, so a nested push gets a fresh one).
    var scratchBuilder: PushBuilder?
    /// The debugger's stop function, while one serves this state (LuaState+Debugger.swift).
    var debugHook: AnyObject?

    /// Creates a state with the standard libraries opened under protection.
    ///
    ///     let lua = try LuaState(profile: .sandboxed, memoryLimit: 64 << 20, timeLimitMs: 500)
    ///
    /// - Parameters:
    ///   - profile: `.trusted` (default) or `.sandboxed`.
    ///   - memoryLimit: bytes the state may hold at once; nil for no limit. A limit of
    ///     0 bytes or fewer holds nothing: the state is refused (`LuaError.memory`).
    ///   - timeLimitMs: milliseconds any one call may run; nil for no limit.
    ///     Values above one day saturate to one day. The limit is kept by a
    ///     watchdog thread: a script cannot see it (`debug.gethook`) nor
    ///     remove it (`debug.sethook`), and it stops long pattern matches too.
    ///   - standalone: behave as the standalone `lua5.4` does (`moonflow exec`):
    ///     under the trusted profile, `require` uses Lua's own searchers and loading rules
    ///     (binary modules included). Otherwise `require` loads Lua files as
    ///     text only.
    ///   - ignoreEnvironment: the package library ignores `LUA_PATH` and `LUA_CPATH`
    ///     (`package.path` and `package.cpath` keep Lua's defaults), as `lua5.4 -E`.
    /// - Throws: `LuaError.memory` if the libraries do not fit in the budget.
    public init(
        profile: Profile = .trusted, memoryLimit: Int? = nil, timeLimitMs: Int64? = nil, standalone: Bool = false,
        ignoreEnvironment: Bool = false
    ) throws {
        LuaState.installCallbacksOnce
        // Not converted to size_t: a negative count would trap there.
        if let memoryLimit, memoryLimit < 1 { throw LuaError.memory(limit: memoryLimit) }
        self.profile = profile
        self.memoryLimit = memoryLimit
        self.timeLimitMs = timeLimitMs.map { min($0, mf_max_time_limit_ms()) }
        self.standalone = standalone
        guard let budget = mf_budget_new(memoryLimit.map { size_t($0) } ?? 0) else {
            throw LuaError.memory(limit: memoryLimit)
        }
        self.budget = budget
        guard let L = mf_newstate(budget) else {
            mf_budget_free(budget)
            throw LuaError.memory(limit: memoryLimit)
        }
        self.L = L
        try check(mf_openlibs_env(L, ignoreEnvironment ? 1 : 0), L)
        if timeLimitMs != nil { try check(mf_install_watchdog(L), L) }
        // Generational, as lua5.4 runs: a feature makes short-lived tables per action (the
        // action, its mutation, a view), which die young; a full incremental cycle traced
        // the whole state for them. 2% fewer instructions per counter action (`scripts/bench calls`).
        mf_gc_generational(L)
        if !(standalone && profile == .trusted) {
            try call(try load(LuaState.textSearcher))
        }
        if profile == .sandboxed {
            _ = try sandboxDefinition()
            if let apply = sandboxApplier { sandboxFolderSetter = try call(apply, []) { try $0.ref(1) } }
        }
    }

    /// The sandbox's one definition (`Lua/sandbox.lua`): what a sandboxed script may
    /// reach. Run once per state, so every read-only table it hands out is known to
    /// every guard in the state. The sandboxed profile applies it to the state's
    /// globals; a host builds a sandboxed script's own globals with its `globals`.
    package func sandboxDefinition() throws -> LuaRef {
        if let sandbox { return sandbox }
        let chunk = try load(LuaState.sandbox)
        let (made, apply) = try call(chunk, []) { slots in
            (try slots.ref(1), try slots.field(1, "sandboxState") { try $0.ref(1) })
        }
        sandbox = made
        sandboxApplier = apply
        return made
    }
    private var sandbox: LuaRef?
    private var sandboxApplier: LuaRef?
    /// Under the sandboxed profile, the function that sets where `require` looks.
    private var sandboxFolderSetter: LuaRef?
    static let sandbox = PrecompiledChunk(
        source: PackageResources.sandbox_lua, compiled: PackageResources.sandbox_luac, name: "[moonflow sandbox]")
    static let textSearcher = PrecompiledChunk(
        source: PackageResources.text_searcher_lua, compiled: PackageResources.text_searcher_luac,
        name: "[moonflow searcher]")
    /// LuaKit's own Lua (Lua/*.lua) with the file its bytecode is kept in, under Sources/
    /// (`HostChunks.all` lists these with the rest; `scripts/precompile-lua` writes them).
    package static let shippedChunks: [(file: String, chunk: PrecompiledChunk)] = [
        ("LuaKit/Lua/compiled/sandbox.luac", sandbox), ("LuaKit/Lua/compiled/text_searcher.luac", textSearcher),
    ]

    /// Adds a module searcher right after the preload one that asks `find` for a module's
    /// text (`Lua/text_searcher.lua`, which also holds the file searcher): `find(name)`
    /// returns the text and where it is (named in messages and tracebacks), or nil and why
    /// not. The text loads as text only; one that does not compile fails as Lua's own
    /// searchers fail ("error loading module 'NAME' from 'WHERE'").
    package func addModuleSearcher(_ find: @escaping LuaFunction) throws {
        _ = try call(try load(LuaState.textSearcher), [.function(find)])
    }

    // At deinit no call can be running: a thread in a call holds a reference to the state.
    deinit { close(evenIfStuck: true) }

    /// Under the sandboxed profile, where `require` finds modules: `NAME.lua` and
    /// `NAME/init.lua` under `folder` (text only), besides what the host preloads.
    /// Does nothing under the trusted profile.
    ///
    ///     try lua.setSandboxModuleFolder("scripts")   // require "util" reads scripts/util.lua
    public func setSandboxModuleFolder(_ folder: String) throws {
        guard let sandboxFolderSetter else { return }
        try call(sandboxFolderSetter, [.value(.string(LuaString(folder)))])
    }

    /// Runs every pending finalizer once (as `lua_close` does), under the time
    /// limit (a finalizer that loops is stopped), then frees the state. Safe to call twice.
    /// Bounded when the state has a time limit: a finalizer that blocks in C past it (and
    /// the stuck grace) leaves the state to the closing thread, unfreed, and `close` returns.
    ///
    /// A stuck state (`isStuck`) is left open: the thread stuck in it may come back into it
    /// at any time. It is freed when the last reference to it goes (no call runs then).
    public func close() { close(evenIfStuck: false) }

    private func close(evenIfStuck: Bool) {
        guard !closed else { return }
        if isStuckNow && !evenIfStuck { return }
        openLock.withLock {
            closed = true
            mf_debug_end(L)  // a debugger's call from another thread finds it closed from now on
        }
        // Closing a stuck state (deinit): its call has returned, as the thread in it held it.
        // Its closing is bounded afresh.
        if isStuckNow { mf_budget_unstick(budget) }
        guard let limit = timeLimitMs, limit > 0 else {
            mf_close_state(L, timeLimitMs ?? 0)
            mf_budget_free(budget)
            return
        }
        // Bounded: the finalizers run under the time limit, on a thread of their own, and a
        // finalizer that blocks in C (a pclose, an os.execute) makes the closing stuck as a
        // call would be: the state is then left to that thread, never freed, and close returns.
        let closing = ClosingState(L: L)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            mf_close_state(closing.L, limit)
            done.signal()
        }
        thread.stackSize = 16 << 20  // finalizers may run as deep as any call
        thread.start()
        while done.wait(timeout: .now() + .milliseconds(20)) == .timedOut {
            if mf_budget_stuck(budget) != 0 { return }
        }
        mf_budget_free(budget)
    }

    /// `body`'s result, unless the state is closed (nil); close() waits for it meanwhile. For
    /// the calls other threads make into an open state (a debugger's breakpoints and pause).
    func whileOpen<T>(_ body: () -> T) -> T? {
        openLock.withLock { closed ? nil : body() }
    }

    /// Whether a call (or a `moonflow test` test) ran on past its time limit in code no
    /// hook reaches, a blocking C or Swift function (`os.execute("sleep 60")`, a service
    /// that never returns): the watchdog's last resort. It stays true for good; the state
    /// is poisoned, and its owner stops waiting on it and builds another (the tool
    /// rebuilds the feature with its last good state). A stuck call counts as one after
    /// its deadline plus the limit again, and at least two seconds. Any thread, while the
    /// state is open.
    public var isStuck: Bool { !closed && isStuckNow }
    private var isStuckNow: Bool { mf_budget_stuck(budget) != 0 }

    /// Whether a call with a time limit (or a test's deadline) is running in this state now.
    /// A stuck state's owner lets it go once this is false: its stuck call has returned, and
    /// the thread that made it holds the state for as long as it still uses it. Any thread.
    package var isInCall: Bool { !closed && mf_budget_busy(budget) != 0 }

    // MARK: - Accounting

    /// Bytes the state holds now.
    public var memoryInUse: Int { mf_budget_used(budget) }

    /// Whether values copied out of this state must be plain data: NaN,
    /// keys that are neither strings nor integers, and tables with metatables of
    /// their own are refused with their path. Off by default (a Lua value may be any
    /// of these); a feature host turns it on, so none of them enters a state.
    package var plainDataOnly = false
    /// The keys copied out of this state, shared by every copy (`SharedKeys`).
    let sharedKeys = SharedKeys()
    /// Whether the deadline of the test running now (`testDeadline()`) has
    /// passed: a wait in Swift stops, so the test can fail instead of hanging.
    package var testDeadlinePassed: Bool { !closed && mf_test_deadline_passed(L) != 0 }

    /// The Lua function `arm(limitMs)` that starts a test's deadline and returns
    /// its to-be-closed guard (nil when the state has no time limit):
    ///
    ///     local guard <close> = arm(10000)
    ///     body()   -- stopped, wherever it loops, once 10 s have passed
    ///
    /// Calls made meanwhile with their own time limit keep it.
    package func testDeadline() throws -> LuaRef { try lightFunctionRef(mf_push_test_deadline) }

    /// Milliseconds left before the test deadline armed on this thread (`testDeadline`) stops
    /// the test, counted as the watchdog counts them; nil when none is armed here.
    package var testTimeLeftMs: Int64? {
        if closed { return nil }
        let left = mf_test_time_left_ms(L)
        return left < 0 ? nil : left
    }

    /// How many values the registry holds (`LuaRef`s, named metatables, the globals), freed
    /// slots left out: what a host's tests and benches watch for references never released.
    package var registryEntries: Int {
        enter(); defer { leave() }
        return Int(mf_registry_refs(L))
    }

    /// Bytes of the process's C heap in use now (malloc's, where the C library says: glibc's
    /// `mallinfo2`), nil elsewhere: for the benches and tests that bound what a long-lived
    /// host keeps. Not the Lua state's own (`memoryInUse`), which is part of it.
    package static var cHeapInUse: Int? {
        let bytes = mf_heap_in_use()
        return bytes < 0 ? nil : Int(bytes)
    }

    /// The most bytes the state has held at once.
    public var peakMemory: Int { mf_budget_peak(budget) }
    /// Forgets the peak (the next reading starts from the current use).
    public func resetPeakMemory() { mf_budget_reset_peak(budget) }

    /// Runs full garbage collection cycles until what they free frees nothing
    /// more: a collected Swift function may release references that free more.
    public func collectGarbage() {
        enter(); defer { leave() }
        for _ in 0..<8 {
            try? check(mf_gc_collect(L, timeLimitMs ?? 0), L)  // a failed cycle leaves its error: popped
            guard pendingUnrefs.hasPending else { return }
            drainUnrefs()
        }
    }

    // MARK: - Confinement and housekeeping

    /// Marks the start of an operation on this state (debug builds check that
    /// no other thread is inside it) and frees registry slots of released refs.
    @inline(__always)
    func enter() {
        #if DEBUG
        confinement.enter()
        #endif
        if pendingUnrefs.hasPending { drainUnrefs() }
    }

    @inline(__always)
    func leave() {
        #if DEBUG
        confinement.leave()
        #endif
    }

    private func drainUnrefs() {
        for ref in pendingUnrefs.take() { mf_unref(L, ref) }
    }

    func scheduleUnref(_ ref: Int32) { pendingUnrefs.add(ref) }

    // MARK: - Status -> error

    /// Turns a Lua status into a thrown `LuaError`, popping the error value.
    /// Every fallible C call goes through here.
    func check(_ status: Int32, _ L: OpaquePointer, chunk: String? = nil) throws {
        guard status != LUA_OK else { return }
        throw popError(status, L, chunk: chunk)
    }

    func popError(_ status: Int32, _ L: OpaquePointer, chunk: String? = nil) -> LuaError {
        if status == MF_NOROOM { return .memory(limit: memoryLimit) }  // nothing was pushed
        defer { mf_pop(L, 1) }
        if status == LUA_ERRMEM { return .memory(limit: memoryLimit) }
        let text: String
        if mf_type(L, -1) == LUA_TSTRING {
            var len = 0
            let p = mf_tostring_raw(L, -1, &len)!
            text = String(decoding: UnsafeRawBufferPointer(start: p, count: len), as: UTF8.self)
        } else {
            text = "(error object is a \(String(cString: lua_typename(L, mf_type(L, -1)))) value)"
        }
        if mf_budget_take_timeout(budget) != 0 {
            return .timeout(
                limitMs: timeLimitMs ?? mf_budget_limit_ms(budget),
                traceback: LuaErrorReport(parsing: text).traceback ?? "")
        }
        if status == LUA_ERRSYNTAX, let chunk {
            return LuaState.syntaxError(text, chunk: chunk)
        }
        return LuaError.runtime(fromMessage: text)
    }

    static func syntaxError(_ text: String, chunk: String) -> LuaError {
        let location = LuaError.leadingLocation(text)
        let line = location.flatMap { $0.split(separator: ":").last.flatMap { Int($0) } }
        var message = text
        if let location, text.hasPrefix(location + ": ") { message = String(text.dropFirst(location.count + 2)) }
        return .syntax(file: chunk, line: line, message: message)
    }
}

/// A state being closed on a thread of its own (LuaState.close).
private struct ClosingState: @unchecked Sendable {
    let L: OpaquePointer
}

/// Registry slots released from other threads, freed on the state's next use.
private final class PendingUnrefs: @unchecked Sendable {
    private let lock = NSLock()
    private var refs: [Int32] = []
    private var count = 0  // read without the lock as a cheap hint

    var hasPending: Bool { count > 0 }
    func add(_ ref: Int32) { lock.lock(); refs.append(ref); count = refs.count; lock.unlock() }
    func take() -> [Int32] { lock.lock(); defer { lock.unlock() }; let r = refs; refs = []; count = 0; return r }
}

/// Debug-build check that only one thread is inside a state at a time
/// (re-entry from the same thread, as when Lua calls Swift calls Lua, is fine).
private final class Confinement: @unchecked Sendable {
    private let lock = NSLock()
    private var owner: pthread_t?
    private var depth = 0

    func enter() {
        lock.lock(); defer { lock.unlock() }
        let me = pthread_self()
        if let owner, depth > 0, pthread_equal(owner, me) == 0 {
            fatalError("LuaState used from two threads at once: confine it to one serial executor")
        }
        owner = me
        depth += 1
    }

    func leave() {
        lock.lock(); defer { lock.unlock() }
        depth -= 1
        if depth == 0 { owner = nil }
    }
}

/// A process-wide counter behind a lock (the serials of states).
private final class SerialCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var value: UInt64 = 0
    func withLock(_ body: (inout UInt64) -> UInt64) -> UInt64 {
        lock.lock(); defer { lock.unlock() }; return body(&value)
    }
}
