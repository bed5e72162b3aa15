import Foundation
import LuaKit
import MoonflowHost
import MoonflowLua

/// The definition's declared `invariants`, checked at every state of the run as the explorer
/// checks them: one holds unless it returns `false` (with an optional reason) or raises. A
/// broken one is an `invariant` event naming it, the step and the action that reached it;
/// the run goes on (the host keeps running and reports), and its exit status is 1.
extension FeatureRun {
    /// What the run's listener on the feature does with each event: prints it and tells the
    /// observers, then checks the invariants after a state: a feature's, or an `mf.compose`'s
    /// own over the state its `combine` made (as the explorer checks them).
    func heard(_ event: FeatureEvent, generation: Int) {
        emit(event, generation: generation)
        guard case .state(let state, let seq) = event, isCurrent(generation) else { return }
        if let single = feature as? LuaFeature {
            checkInvariants(of: single, single.definition, state: state, seq: seq, generation: generation)
        } else if let composite = feature as? LuaComposite {
            checkInvariants(of: composite, composite.definition, state: state, seq: seq, generation: generation)
        }
    }

    /// Each invariant of `definition` (`feature`'s) that does not hold for `state`: reported
    /// when it breaks (held before, or this is the first state), not again until it has held.
    private func checkInvariants(
        of feature: some BridgedFeature, _ definition: FeatureDefinition, state: LuaValue, seq: Int, generation: Int
    ) {
        // Their places are known for every declared one (`invariants.NAME`); none, no call.
        guard definition.locations.keys.contains(where: { $0.hasPrefix("invariants.") }),
            let checker = checker(for: feature.bridge.lua)
        else { return }
        let cause = feature.eventCause
        let broken: [(name: String, reason: String?)]
        do {
            broken = try feature.bridge.lua.call(checker, [.ref(definition.table), .value(state)]) { slots in
                guard case .table(let list) = try slots.value(1, path: "invariants") else { return [] }
                return list.array.compactMap { item in
                    item["name"]?.stringValue.map { ($0, item["reason"]?.stringValue) }
                }
            }
        } catch {
            let (message, location) = LuaErrorReport.describe(error, fallback: feature.source)
            emit(.error(message: message, location: location), generation: generation)
            return
        }
        let names = Set(broken.map(\.name))
        let newly = lock.withLock {
            defer { brokenInvariants = names }
            return broken.filter { !brokenInvariants.contains($0.name) }
        }
        for (name, reason) in newly {
            emit(.invariant(name: name, seq: seq, action: cause, reason: reason), generation: generation)
        }
    }

    /// The Lua function that runs the invariants (`FeatureRun.invariantsChunk`), loaded once per state.
    private func checker(for lua: LuaState) -> LuaRef? {
        let id = ObjectIdentifier(lua)
        if let loaded = lock.withLock({ invariantChecker }), loaded.state == id { return loaded.function }
        guard let function = try? lua.load(string: FeatureRun.invariantsChunk, name: "=invariants") else { return nil }
        lock.withLock { invariantChecker = (id, function) }
        return function
    }

    /// Given the definition and a copy of the state, the invariants that do not hold, in
    /// the order of their names: `{ { name = "totalAddsUp", reason = "..." }, ... }`.
    static let invariantsChunk = """
        local definition, state = ...
        local list, broken, names = definition.invariants, {}, {}
        if type(list) ~= "table" then return broken end
        for name, check in pairs(list) do
          if type(check) == "function" then names[#names + 1] = name end
        end
        table.sort(names, function(a, b) return tostring(a) < tostring(b) end)
        for _, name in ipairs(names) do
          local ok, result, why = pcall(list[name], state)
          if not ok then
            broken[#broken + 1] = { name = tostring(name), reason = "it raised " .. tostring(result) }
          elseif result == false then
            broken[#broken + 1] = { name = tostring(name), reason = why ~= nil and tostring(why) or nil }
          end
        end
        return broken
        """
}
