import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua

/// Something that watches a `moonflow run` beside its printed output: the
/// `--record` file and the `--inspect` server.
///
///     final class Count: RunObserver {
///         var n = 0
///         func started(_ run: RunDescription, dispatch: any RunDispatcher) {}
///         func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?) { n += 1 }
///         func input(_ action: LuaValue, t: Int) {}
///     }
///
/// **Threading:** `observe` is called on the host's state executor in loop order
/// (inside the feature's outlet, so `cause` is the feature's `eventCause`) or on the
/// input thread for input errors, always under the run's lock: calls never overlap.
public protocol RunObserver: AnyObject, Sendable {
    /// The feature loaded; `dispatch` sends actions into the run from elsewhere (a page).
    func started(_ run: RunDescription, dispatch: any RunDispatcher)
    /// An event, at `t` ms on the run's clock; `cause` is the action behind it, if any.
    func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?)
    /// An action the run is about to send (from the input or `dispatch`), at `t` ms.
    func input(_ action: LuaValue, t: Int)
    /// A service or repository call's answer, as a recording's `service` line says it (where
    /// the run hands answers out: `run --inspect`); the inspector's `rerun` answers with it.
    func answered(_ line: String)
    /// `observe` with `causeID`, which tells equal actions apart (see the default).
    func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?, causeID: String?)
    /// `observe` with `causeID` and, under an `mf.compose`, the child a mutation or state
    /// event came from (`from`: what the printed jsonl line says; see the default).
    func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?, causeID: String?, from child: String?)
}

extension RunObserver {
    /// Most observers have no use for answers.
    public func answered(_ line: String) {}

    /// `observe`, with which action `cause` is when two are equal (`causeID`: its number in
    /// the run, the same for an action event and the events it causes; nil when unknown).
    /// What a run calls; observers that group events by their action (the inspector) take it.
    public func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?, causeID: String?) {
        observe(event, t: t, cause: cause)
    }

    /// `observe` with `causeID`, and the child an event came from: what a run calls. Observers
    /// that write events as the run prints them (a recording) take it; the rest ignore it.
    public func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?, causeID: String?, from child: String?) {
        observe(event, t: t, cause: cause, causeID: causeID)
    }
}

/// What runs: the feature's identity, its declared actions, where it came from.
public struct RunDescription: Sendable {
    /// The definition's name and state-shape version.
    public let name: String
    public let version: Int64
    /// PATH as given to `moonflow run`.
    public let path: String
    /// The declared actions (nil under an `mf.compose` that declares none: its `route` decides).
    public let actions: Schema?
    public let clock: FeatureHost.Clock
    /// The run's clock now, in ms (virtual time on the virtual clock).
    package let now: @Sendable () -> Int

    public init(
        name: String, version: Int64, path: String, actions: Schema?, clock: FeatureHost.Clock,
        now: @escaping @Sendable () -> Int = { 0 }
    ) {
        self.name = name
        self.version = version
        self.path = path
        self.actions = actions
        self.clock = clock
        self.now = now
    }
}

/// Sends actions into a running `moonflow run` from another thread.
public protocol RunDispatcher: Sendable {
    /// Validates and queues `action` as if it were an input line.
    /// - Throws: the schema's error naming the action, field and expected type; nothing is sent.
    func dispatch(_ action: LuaValue) throws
    /// The work in flight now, each with the action that started it (empty on the virtual clock,
    /// which only the input thread may touch).
    var inFlight: [FeatureFlight] { get }
    /// A hot restart: the plugin's code again and a fresh state from its `initial`,
    /// work in flight cancelled; the run reports it as a `reload` event, or an error.
    func restart() throws
    /// Opens a past step in the debugger: `inputLines` (`{"at":T,"send":{...}}`, the run's
    /// actions up to that step's) sent again on the virtual clock in a host of its own, each
    /// service or repository call answered by `answers` (the run's `service` lines) as the
    /// run's was, stopped at the `handle` of the action at `action` (from 0) for the editor
    /// attached to the run's debugger.
    /// - Throws: why it cannot: no debugger (`--debug`), no editor attached, a run that is over.
    func openInDebugger(inputLines: [String], answers: [String], action: Int) throws
}

extension RunDispatcher {
    public func openInDebugger(inputLines: [String], answers: [String], action: Int) throws {
        throw HostError.noDebugger
    }
}

extension HostError {
    /// Why a run without a debugger cannot open a step in one, and the two ways that can.
    package static let noDebugger = HostError(
        "this run has no debugger to open a step in; run it with `moonflow run PATH --inspect --debug PORT` and attach an editor"
    )
}
