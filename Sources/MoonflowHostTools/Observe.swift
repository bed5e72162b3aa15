import MoonflowHost
import MoonflowLua
import Streams

/// Every event of a feature, by callback: what tools, inspectors and logs read. An app's
/// screens read `states`, `effects` and `errors` (MoonflowHost) or a view model instead.
extension RunningFeature {
    /// Calls `body` with every event of `kinds` (all by default) until the token is
    /// cancelled or released. Asking for fewer kinds costs less: without a mutation
    /// observer, a mutation `handle` returned is never copied out of Lua.
    public func observe(
        kinds: FeatureEvent.Kinds = .all, _ body: @escaping @Sendable (FeatureEvent) -> Void
    ) -> ObservationToken {
        ObservationToken(outlet.add(kinds: kinds, body))
    }
}

extension MainActorFeature {
    /// Calls `body` on the main actor with every event of `kinds`, in loop order, until the
    /// token is cancelled or released.
    public func observe(
        kinds: FeatureEvent.Kinds = .all, _ body: @escaping @MainActor (FeatureEvent) -> Void
    ) -> ObservationToken {
        // Delivered on the state executor, which is the main actor's (the main queue, wherever
        // it runs): isolated already, as the main scheduler's mark says.
        let isolated = UncheckedMainActorCall(body)
        return feature.observe(kinds: kinds) { event in
            precondition(MainScheduler.isCurrent, "a main-actor host's event arrived off the main actor")
            MainActor.assumeIsolated { isolated.body(event) }
        }
    }

}

/// A main-actor closure carried through a `@Sendable` one that is only ever called on the
/// main actor (checked where it is called).
private struct UncheckedMainActorCall: @unchecked Sendable {
    let body: @MainActor (FeatureEvent) -> Void
    init(_ body: @escaping @MainActor (FeatureEvent) -> Void) { self.body = body }
}
