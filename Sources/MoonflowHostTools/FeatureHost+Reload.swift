import Foundation
import MoonflowHost
import MoonflowLua

/// Live reload: new code is loaded and validated beside the old,
/// then swapped in whole, keeping the state.
///
///     let counter = try host.load("counter")
///     // ... edit plugins/counter/init.lua ...
///     let report = try host.reload(counter)   // throws, and the old code keeps running, if the new code is bad
///
/// - The plugin's own modules (`require "NAME.mod"`, for every plugin in the
///   search paths) leave `package.loaded` first, so the new code gets fresh
///   ones; if anything fails they are put back and nothing changes.
/// - Validation is what `moonflow check` does: the chunk loads and runs, the
///   definition is valid, its interactors and children can be made.
/// - Work in flight (streams, timers, intervals, `mf.task`) keeps running and
///   its mutations meet the new reducer; only work started by an action type
///   the new code no longer declares is cancelled. The definition, `env`,
///   services and interactors are replaced; the state is kept (children's
///   states by child name), or passed through the new `migrate(old,
///   fromVersion)` when `version` changed. Without a `migrate`, keys the new
///   `initial` has and the state lacks are filled in (through tables present
///   in both). A state event follows when the state changed; the `reload`
///   event lists the keys added, the keys `initial` no longer has, and the
///   work kept and cancelled.
/// - `restart` is a hot restart: the new code with a fresh state from its
///   `initial`, everything in flight cancelled.
extension FeatureHost {
    /// Moonflow's version (`mf.version` in Lua, `moonflow --version`).
    public static var version: String { MoonflowModule.version }

    /// Reloads the plugin `feature` was loaded from.
    ///
    /// - Parameters:
    ///   - changed: the files that changed, for the report (default: the plugin's main file).
    ///   - since: when the change was noticed (default: now).
    /// - Throws: `FeatureError` of stage `.reload` (the `LuaError`, `HostError` or
    ///   `DefinitionError` in `underlying`); the old code and the state are then untouched, and
    ///   the error is also reported on the feature's `errors` (a view model's `lastError`).
    @discardableResult
    public func reload(_ feature: RunningFeature, changed: [String]? = nil, since: Date = Date()) throws -> ReloadReport
    {
        try swapCode(of: feature, changed: changed, since: since, restarting: false)
    }

    /// A hot restart: loads the plugin's code again (as `reload` does) and starts
    /// over from the new `initial`, cancelling everything in flight.
    /// - Throws: as `reload`; the old code and the state are then untouched, and the error is
    ///   also reported on the feature's `errors`.
    @discardableResult
    public func restart(_ feature: RunningFeature, since: Date = Date()) throws -> ReloadReport {
        try swapCode(of: feature, changed: nil, since: since, restarting: true)
    }
}
