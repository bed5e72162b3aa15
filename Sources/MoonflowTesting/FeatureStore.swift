import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import Streams

/// A feature under test on a virtual clock of its own, with exhaustive
/// assertions in the manner of TCA's `TestStore`: every state change, every
/// mutation that arrives later, every outward effect and every error must be
/// asserted, and `finish()` fails on anything left over.
///
///     let store = try FeatureStore("counter", searchPaths: ["plugins"])
///     try store.send(["type": "increment", "by": 9]) { $0["count"] = 9 }
///     try store.send(["type": "incrementLater", "ms": 50])
///     store.advance(by: 50)
///     try store.receive(["type": "add", "n": 1]) { $0["count"] = 10 }
///     try store.receiveEffect(["type": "milestone", "count": 10])
///     try store.finish()
///
/// - `send` covers the mutations its action produced without the clock moving;
///   later ones (timers, services) are asserted one by one with `receive`.
/// - A `change` applies the expected change to a copy of the last asserted
///   state; the actual state must then equal it exactly (a diff by path when
///   it does not). With no `change`, the state must not have changed.
/// - Non-exhaustive stores (`exhaustive: false`) check only what the test
///   states: `change` applies to the state before the step, `receive` skips
///   mutations until one matches, and `finish` ignores what was left over.
///
/// Failures are thrown as `FeatureStore.Failure`, whose message starts with
/// the test's `file:line`. **Threading:** use a store from one thread. Its steps
/// block that thread while Swift services run, which suits XCTest's synchronous
/// tests; in an async test (Swift Testing's run them in parallel on the cooperative
/// pool the services need) use `TypedFeatureStore`, whose steps suspend instead.
public final class FeatureStore: @unchecked Sendable {
    /// An assertion that did not hold.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// One step being asserted: what it was, the state the expected change
    /// applies to, and the state it must match.
    package struct Step {
        let what: String
        package let base: LuaValue
        let actual: LuaValue
        /// How many errors the feature had reported when the step began: any after it are the
        /// step's own, shown first when the step fails (the cause of a wrong state).
        var errorsBefore = 0
    }

    private struct Received {
        let mutation: LuaValue
        let before: LuaValue
        let after: LuaValue
        let cause: LuaValue?
    }

    /// The host the feature runs on (its own virtual clock).
    public let host: FeatureHost
    public let feature: RunningFeature
    public let exhaustive: Bool
    /// Every event the feature reported, with its time and cause.
    public let log = EventLog()
    /// The store's clock.
    public var clock: TestScheduler { host.testScheduler! }

    private var lastAsserted: LuaValue
    private var lastSeen: LuaValue
    private var pendingMutation: (LuaValue, LuaValue?)?
    private var received: [Received] = []
    private var outward: [(effect: LuaValue, from: String?, cause: LuaValue?)] = []
    private var failures: [(message: String, location: String?, cause: LuaValue?)] = []
    /// Every error the feature reported, with its traceback, in order (`failures` is what is
    /// still unasserted; this is what a failing step shows as its cause).
    private var reported: [(message: String, location: String?, traceback: String?)] = []
    private var subscription: Disposable?
    private var finished = false
    /// Set while an async step runs (`TypedFeatureStore`): it has waited for the services
    /// already, without blocking, so `settle()` only runs what is due and never waits.
    private var settledAhead = false
    /// What `T.explore` reads after each step (`FeatureStore+Explore.swift`); nil until it asks.
    package var exploreLog: ExploreLog?

    /// Loads `plugin` (a name found in `searchPaths`, a folder or a `.lua` file)
    /// on a host of its own.
    ///
    /// - Parameters:
    ///   - services: Swift services by name (they replace any of the same name).
    ///   - state: a state to start from instead of the definition's `initial`.
    ///   - env: what `env.now()`, `env.uuid()` and `env.random(...)` return, and the seed.
    public convenience init(
        _ plugin: String, searchPaths: [String] = ["plugins"], services: [String: LuaService] = [:],
        state: LuaValue? = nil, exhaustive: Bool = true, env: EnvStub = EnvStub(),
        timeLimitMs: Int64? = 1000, memoryLimitMB: Int? = 512
    ) throws {
        try self.init(
            plugin, searchPaths: searchPaths,
            services: services.sorted(by: { $0.key < $1.key }).map { ServiceStub.service($0.key, $0.value) },
            state: state, exhaustive: exhaustive, env: env, timeLimitMs: timeLimitMs, memoryLimitMB: memoryLimitMB)
    }

    /// Loads `plugin` with `services` stubbed in Swift: `.stub("products") { (page: Int) in ... }`
    /// decodes the argument and encodes the answer (`ServiceStub`); `env` stubs the feature's
    /// `env.now()`, `env.uuid()` and `env.random(...)` and sets its seed (`EnvStub`).
    public convenience init(
        _ plugin: String, searchPaths: [String] = ["plugins"], services: [ServiceStub],
        state: LuaValue? = nil, exhaustive: Bool = true, env: EnvStub = EnvStub(),
        timeLimitMs: Int64? = 1000, memoryLimitMB: Int? = 512
    ) throws {
        var configuration = FeatureHost.Configuration(
            searchPaths: searchPaths, timeLimitMs: timeLimitMs,
            memoryLimitMB: memoryLimitMB, clock: .virtual)
        configuration.seed = env.seed
        let host = try FeatureHost(configuration: configuration)
        for service in services { service.register(on: host) }
        try env.install(on: host)
        try self.init(host: host, feature: host.load(plugin, initial: state), exhaustive: exhaustive)
    }

    /// A store over a feature already made on `host` (a virtual-clock host).
    package init(host: FeatureHost, feature: RunningFeature, exhaustive: Bool) {
        precondition(host.testScheduler != nil, "a FeatureStore needs a host on the virtual clock")
        self.host = host
        self.feature = feature
        self.exhaustive = exhaustive
        lastAsserted = feature.state
        lastSeen = feature.state
        // The internals read per event, cast once here.
        subscription = feature.outlet.add { [weak self, weak feature = feature.internals] event in
            self?.record(event, cause: feature?.eventCause, error: feature?.eventError)
        }
        running {
            feature.start()
            clock.advance(by: 0)
        }
    }

    deinit {
        subscription?.dispose()
        feature.cancel(actionType: nil)
    }

    /// The current state.
    public var state: LuaValue { feature.state }

    // MARK: - Assertions (Swift)

    /// Sends `action` and asserts the state it led to.
    /// - Parameter change: applies the expected change to the last asserted state.
    public func send(
        _ action: LuaValue, file: StaticString = #filePath, line: UInt = #line,
        _ change: ((inout LuaValue) throws -> Void)? = nil
    ) throws {
        try located(file, line) {
            _ = try beginSend(action)
            try complete(expected: try change.map { try apply($0) })
        }
    }

    /// Asserts the next mutation that arrived after a send (from a timer, a service, an effect).
    public func receive(
        _ mutation: LuaValue, file: StaticString = #filePath, line: UInt = #line,
        _ change: ((inout LuaValue) throws -> Void)? = nil
    ) throws {
        try located(file, line) {
            _ = try beginReceive(mutation)
            try complete(expected: try change.map { try apply($0) })
        }
    }

    /// Asserts the next outward effect (one no internal handler took) and,
    /// given `from`, the child of an `mf.compose` it came from.
    public func receiveEffect(
        _ effect: LuaValue, from: String? = nil, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        try located(file, line) { try checkEffect(effect, from: from) }
    }

    /// Asserts the next error the feature reported: its message must contain `text`.
    public func receiveError(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try located(file, line) { try checkError(text) }
    }

    /// Fails on mutations not received, outward effects and errors not asserted,
    /// and work still in flight, naming the action that started each; then stops
    /// the feature.
    public func finish(file: StaticString = #filePath, line: UInt = #line) throws {
        try located(file, line) { try checkFinish() }
    }

    /// How many mutations, outward effects and errors arrived that are not asserted yet, as
    /// they stand (nothing runs): an async step waits for services when its kind has none.
    package var unassertedCounts: (mutations: Int, effects: Int, errors: Int) {
        (received.count, outward.count, failures.count)
    }

    /// The mutations and outward effects that arrived and are not asserted yet, after letting
    /// work due now run: what a typed `receive` picks from (`TypedFeatureStore`).
    package func unasserted() -> (mutations: [LuaValue], effects: [LuaValue]) {
        if received.isEmpty || outward.isEmpty { settle() }
        return (received.map(\.mutation), outward.map(\.effect))
    }

    package func located(_ file: StaticString, _ line: UInt, _ body: () throws -> Void) throws {
        do { try body() } catch let failure as Failure {
            throw Failure("\(file):\(line): \(failure.message)")
        }
    }

    private func apply(_ change: (inout LuaValue) throws -> Void) throws -> LuaValue {
        var expected = pendingStep?.base ?? lastAsserted
        try change(&expected)
        return expected
    }

    /// The top-level fields of the feature's declared `state` (a record), or nil when the
    /// state is not declared (inferred from `initial`, so any field may come and go).
    package var declaredFields: [String]? {
        guard case .record(let fields)? = (feature as? LuaFeature)?.definition.declaredState?.required else {
            return nil
        }
        return fields.map(\.name)
    }

    /// The send or receive whose state `complete` checks next.
    private var pendingStep: Step?

    // MARK: - Steps (shared with the Lua store)

    /// Sends `action` and runs what is due without moving the clock.
    /// - Returns: the step to complete with the expected state.
    /// - Throws: `Failure` when earlier mutations or errors are unasserted, or the action is refused.
    package func beginSend(_ action: LuaValue) throws -> Step {
        let what = "send(\(Self.typeName(action)))"
        try checkUsable(what)
        if exhaustive, !received.isEmpty {
            throw Failure(
                """
                \(what) was called while \(count(received.count, "mutation")) not received yet:
                \(received.map { "  - \(Self.describe($0.mutation))\(Self.from($0.cause))" }.joined(separator: "\n"))
                Assert each with store:receive(mutation [, change]) first, or call store:skipReceived().
                """)
        }
        try checkNoFailures(before: what)
        received.removeAll()
        outward.removeAll { _ in !exhaustive }
        let before = feature.state
        let errorsBefore = reported.count
        // Async results (Swift services, repositories) are held back until the send is
        // done: whatever the threads' timing, they arrive later, to be received.
        try host.bridge.holdingReentries {
            do {
                try running { try feature.send(action) }
            } catch {
                let (message, _) = LuaErrorReport.describe(error, fallback: nil)
                throw Failure("\(what) was refused: \(message)")
            }
            running { clock.advance(by: 0) }
        }
        // What the action produced without the clock moving is covered by the send.
        received.removeAll()
        let step = Step(
            what: what, base: exhaustive ? lastAsserted : before, actual: feature.state, errorsBefore: errorsBefore)
        pendingStep = step
        return step
    }

    /// Takes the next received mutation, which must equal `mutation`; with `partial`, only
    /// the fields `mutation` gives are compared (`store:receive("loaded")` gives the type alone).
    package func beginReceive(_ mutation: LuaValue, partial: Bool = false) throws -> Step {
        let what = "receive(\(Self.typeName(mutation)))"
        try checkUsable(what)
        let errorsBefore = reported.count
        if received.isEmpty { settle() }
        let wanted = partial ? Self.describePartial(mutation) : Self.describe(mutation)
        guard !received.isEmpty else {
            throw Failure(
                """
                \(what): expected mutation \(wanted), but no mutation arrived.\(inFlightHint())
                """)
        }
        // What a mutation is compared as: only the fields `mutation` gives, when partial.
        func compared(_ m: LuaValue) -> LuaValue { partial ? Self.project(m, onto: mutation) : m }
        let next: Received
        if exhaustive {
            next = received.removeFirst()
            if !StateDiff.same(compared(next.mutation), mutation) {
                lastAsserted = next.after
                throw Failure(
                    """
                    \(what): the next mutation does not match\(partial ? " in the fields given" : "") (expected -, received +):
                    \(indent(StateDiff.lines(expected: mutation, actual: compared(next.mutation), root: "mutation")))
                    """)
            }
        } else {
            guard let index = received.firstIndex(where: { StateDiff.same(compared($0.mutation), mutation) }) else {
                throw Failure(
                    """
                    \(what): no received mutation matches \(wanted); received:
                    \(received.map { "  - \(Self.describe($0.mutation))" }.joined(separator: "\n"))
                    """)
            }
            next = received[index]
            received.removeFirst(index + 1)
        }
        let step = Step(
            what: what, base: exhaustive ? lastAsserted : next.before, actual: next.after, errorsBefore: errorsBefore)
        pendingStep = step
        return step
    }

    /// Compares the actual state after the last `beginSend`/`beginReceive` with
    /// `expected` (nil: no change expected; in a non-exhaustive store, nothing to check).
    package func complete(expected: LuaValue?) throws {
        guard let step = pendingStep else { throw Failure("internal: no send or receive to complete") }
        pendingStep = nil
        lastAsserted = step.actual
        let expected = expected ?? (exhaustive ? step.base : step.actual)
        let diff = StateDiff.lines(expected: expected, actual: step.actual)
        guard diff.isEmpty else {
            throw Failure(
                causes(of: step) + """
                    State after \(step.what) does not match the expected change:
                    \(indent(diff))
                    """)
        }
    }

    package func checkEffect(_ effect: LuaValue, from: String? = nil) throws {
        let what = "receiveEffect(\(Self.typeName(effect)))"
        try checkUsable(what)
        if outward.isEmpty { settle() }
        guard !outward.isEmpty else {
            throw Failure(
                "\(what): expected outward effect \(Self.describe(effect)), but none went out.\(inFlightHint())")
        }
        func matches(_ e: (effect: LuaValue, from: String?, cause: LuaValue?)) -> Bool {
            StateDiff.same(e.effect, effect) && (from == nil || e.from == from)
        }
        if exhaustive {
            let next = outward.removeFirst()
            guard StateDiff.same(next.effect, effect) else {
                throw Failure(
                    """
                    \(what): the next outward effect does not match (expected -, actual +):
                    \(indent(StateDiff.lines(expected: effect, actual: next.effect, root: "effect")))
                    """)
            }
            if let from, next.from != from {
                throw Failure(
                    "\(what): the effect came from \(next.from.map { "child '\($0)'" } ?? "the feature itself"), not from child '\(from)'"
                )
            }
        } else {
            guard let index = outward.firstIndex(where: matches) else {
                throw Failure(
                    "\(what): no outward effect matches \(Self.describe(effect)); went out: \(outward.map { Self.describe($0.effect) }.joined(separator: ", "))"
                )
            }
            outward.removeFirst(index + 1)
        }
    }

    package func checkError(_ text: String) throws {
        let what = "receiveError(\(StateDiff.render(.string(LuaString(text)))))"
        try checkUsable(what)
        if failures.isEmpty { settle() }
        guard !failures.isEmpty else { throw Failure("\(what): expected an error, but the feature reported none") }
        let next = failures.removeFirst()
        guard text.isEmpty || next.message.contains(text) else {
            throw Failure(
                "\(what): the next error does not contain that text; it was:\n  \(EventLog.firstLine(next.message))\(next.location.map { " (\($0))" } ?? "")"
            )
        }
    }

    package func checkFinish() throws {
        try checkUsable("finish()")
        settle()
        var problems: [String] = []
        if exhaustive {
            if !received.isEmpty {
                problems.append(
                    "\(count(received.count, "mutation")) not received:\n"
                        + received.map { "  - \(Self.describe($0.mutation))\(Self.from($0.cause))" }.joined(
                            separator: "\n")
                        + "\n  Assert each with store:receive(mutation [, change]), or call store:skipReceived().")
            }
            if !outward.isEmpty {
                problems.append(
                    "\(count(outward.count, "outward effect")) not asserted:\n"
                        + outward.map { "  - \(Self.describe($0.effect))\(Self.from($0.cause))" }.joined(
                            separator: "\n")
                        + "\n  Assert each with store:receiveEffect(effect).")
            }
            let flights = feature.inFlight
            if !flights.isEmpty {
                problems.append(
                    "\(count(flights.count, "stream")) still in flight:\n"
                        + flights.map {
                            "  - \($0.what)\($0.child.map { " in child '\($0)'" } ?? ""), started by action \(Self.describe($0.action))"
                        }.joined(separator: "\n")
                        + liveIDsLine()
                        + "\n  Move the clock with store:advance(ms) until they finish, or call store:skipInFlight().")
            }
        }
        if !failures.isEmpty {
            problems.append(
                "\(count(failures.count, "error")) not asserted:\n"
                    + failures.map {
                        "  - \(EventLog.firstLine($0.message))\($0.location.map { " (\($0))" } ?? "")\(Self.from($0.cause))"
                    }.joined(separator: "\n")
                    + "\n  Assert each with store:receiveError(text).")
        }
        finished = true
        running { feature.cancel(actionType: nil) }
        subscription?.dispose()
        guard problems.isEmpty else {
            throw Failure("finish() found work left over:\n" + problems.joined(separator: "\n"))
        }
    }

    /// Moves the store's clock `ms` milliseconds on, running every timer due on the way.
    public func advance(by ms: Int) {
        running { host.advance(by: ms) }
    }

    /// Forgets the mutations and outward effects not yet asserted; the last
    /// asserted state becomes the current one.
    public func skipReceived() {
        settle()
        received.removeAll()
        outward.removeAll()
        lastAsserted = feature.state
    }

    /// Cancels every stream still in flight.
    public func skipInFlight() {
        running {
            feature.cancel(actionType: nil)
            clock.advance(by: 0)
        }
    }

    // MARK: - Internals

    /// Runs what is due now and waits (blocking this thread, in real time) for the services in
    /// flight; in `withoutWaiting`, only runs what is due (an async step has waited already).
    private func settle() {
        guard settledAhead else { return running { host.settle() } }
        running {
            host.bridge.releaseReentries(on: clock)
            clock.advance(by: 0)
        }
    }

    /// Runs `body`, a synchronous step an async caller has settled for, with `settle()` never
    /// waiting: a service still in flight (past the async wait's timeout) must not block.
    package func withoutWaiting<R>(_ body: () throws -> R) rethrows -> R {
        let outer = settledAhead
        settledAhead = true
        defer { settledAhead = outer }
        return try body()
    }

    private func checkUsable(_ what: String) throws {
        if finished { throw Failure("\(what) after finish(): the store has stopped; make a new one with T.store") }
    }

    private func checkNoFailures(before what: String) throws {
        guard !failures.isEmpty else { return }
        let listed = failures.map {
            "  - \(EventLog.firstLine($0.message))\($0.location.map { " (\($0))" } ?? "")\(Self.from($0.cause))"
        }
        throw Failure(
            "\(what) was called while \(count(failures.count, "error")) not asserted:\n\(listed.joined(separator: "\n"))\nAssert each with store:receiveError(text) first."
        )
    }

    /// Runs `body` with the shared Lua streams scheduling on this store's clock.
    package func running<R>(_ body: () throws -> R) rethrows -> R {
        guard let router = host.router else { return try body() }
        return try router.with(clock, body)
    }

    private func record(_ event: FeatureEvent, cause: LuaValue?, error: FeatureError?) {
        // An explored store asserts nothing: what the explorer reads is all it keeps.
        if let exploreLog { exploreLog.record(event, cause: cause); return }
        log.append(event, t: clock.now, cause: cause)
        switch event {
        case .mutation(let m, _):
            pendingMutation = (m, cause)
        case .state(let s, let seq) where seq > 0:
            if let (m, c) = pendingMutation {
                received.append(Received(mutation: m, before: lastSeen, after: s, cause: c ?? cause))
                pendingMutation = nil
            }
            lastSeen = s
        case .effect(let e, let from):
            outward.append((e, from, cause))
        case .error(let message, let location):
            failures.append((message, location, cause))
            reported.append((message, location, error?.traceback))
        default:
            break
        }
    }

    /// The errors the feature reported during `step`, each with its `file:line` and
    /// traceback, to stand first in the step's failure: a reducer that raised is why the
    /// state did not change (as a test store shows the error a reducer threw). Empty when none.
    private func causes(of step: Step) -> String {
        let during = reported.dropFirst(step.errorsBefore)
        guard !during.isEmpty else { return "" }
        let each = during.map { error in
            var text = error.message
            if let location = error.location, !text.hasPrefix(location) { text = "\(location): \(text)" }
            if let traceback = error.traceback, !text.contains("stack traceback:") { text += "\n" + traceback }
            return Self.ownFrames(text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
        }
        // One error: on the failure's first line, which the summary of a spec run shows.
        if let only = each.first, each.count == 1 {
            return "\(step.what) raised an error in the feature: \(only[0])\n"
                + (only.count > 1 ? indent(Array(only.dropFirst())) + "\n" : "")
        }
        return "\(step.what) raised \(each.count) errors in the feature:\n" + each.map(indent).joined(separator: "\n")
            + "\n"
    }

    /// A message and its traceback with Moonflow's own frames left out (its Lua, C
    /// functions, tail calls): what is left is the plugin's and the spec's code.
    static func ownFrames(_ lines: [String]) -> [String] {
        var inTraceback = false
        return lines.filter { line in
            if line.hasPrefix("stack traceback:") { inTraceback = true; return true }
            guard inTraceback else { return true }
            let frame = line.trimmingCharacters(in: .whitespaces)
            return
                !(frame.hasPrefix("[C]") || frame.hasPrefix("moonflow:") || frame.hasPrefix("moonflow.test:")
                || frame.hasPrefix("moonflow.spec:") || frame.contains("/busted/")
                || frame.hasPrefix("(...tail calls...)") || frame.hasPrefix("..."))
        }.map { $0.replacingOccurrences(of: "\t", with: "  ") }
    }

    /// The `env.cancellable` ids still live, as a line for `finish`'s message ("" when none).
    private func liveIDsLine() -> String {
        let ids = feature.liveCancellableIDs
        guard !ids.isEmpty else { return "" }
        return
            "\n  Cancellable ids still live: \(ids.joined(separator: ", ")) (a handler returning env.cancel(id) stops one)."
    }

    private func inFlightHint() -> String {
        let flights = feature.inFlight
        guard !flights.isEmpty else { return "" }
        let next =
            clock.nextDueTime.map { " (the next timer is due at \($0) ms; the clock is at \(clock.now) ms)" } ?? ""
        return
            "\nStill in flight: \(flights.map { "\($0.what), started by \(Self.describe($0.action))" }.joined(separator: "; ")).\nMove the clock with store:advance(ms)\(next)."
    }

    private func indent(_ lines: [String]) -> String { lines.map { "  " + $0 }.joined(separator: "\n") }

    private func count(_ n: Int, _ noun: String) -> String { n == 1 ? "1 \(noun) was" : "\(n) \(noun)s were" }

    static func typeName(_ v: LuaValue) -> String { v["type"]?.stringValue ?? StateDiff.render(v) }

    /// `add { n = 1 }`: the type, then the other fields.
    static func describe(_ v: LuaValue) -> String {
        guard case .table(var t) = v, let type = v["type"]?.stringValue else { return StateDiff.render(v) }
        t[.string("type")] = .nil
        return t.isEmpty ? type : "\(type) \(StateDiff.render(.table(t)))"
    }

    /// `loaded (its fields not compared)`, `loaded { page = 2 } (other fields not compared)`: a
    /// mutation matched by type or by some of its fields.
    static func describePartial(_ v: LuaValue) -> String {
        guard case .table(var t) = v, let type = v["type"]?.stringValue else { return describe(v) }
        t[.string("type")] = .nil
        return t.isEmpty
            ? "\(type) (its fields not compared)" : "\(type) \(StateDiff.render(.table(t))) (other fields not compared)"
    }

    /// `actual` with only the keys `expected` has (a partial receive's comparison).
    static func project(_ actual: LuaValue, onto expected: LuaValue) -> LuaValue {
        guard case .table(let want) = expected, case .table(let have) = actual else { return actual }
        var out = LuaTable()
        for (key, _) in want.entries { out[key] = have[key] }
        return .table(out)
    }

    private static func from(_ cause: LuaValue?) -> String {
        cause.map { " (from action \(describe($0)))" } ?? ""
    }
}
