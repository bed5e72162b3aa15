/// What a fused step did with one action: a host whose handle and reduce can run as one
/// call (the Lua bridge, in one protected call) hands the loop this instead of a `Handled`.
///
///     step: { action, state in
///         guard let effect = try? handleAndReduceInOneCall(action, &state) else { return .handled(slowPath(action)) }
///         return .reduced(effect: effect)
///     }
///
/// `.handled` goes on as after `handle` (its mutations are reduced by `reduce` as usual);
/// `.reduced` says the one synchronous mutation was already reduced into the state given;
/// `.failed` says that reduce refused it (reported with stage `.reduce`, state unchanged).
@usableFromInline package enum Stepped<Mutation: Sendable, Effect: Sendable> {
    case handled(Handled<Mutation>)
    case reduced(effect: Effect?)
    case failed(any Error)
}
