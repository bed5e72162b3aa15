import LuaKit

/// A mutation on its way to `reduce`, as the `Interactor` loop carries it.
///
/// The table `handle` returned stays in Lua when the in-place check vouches for
/// it (a flat table of declared fields): the loop then carries only a `KeptMutation`
/// token, and `reduce` gets the very same table. Nothing is copied into Swift
/// unless someone asks: a listener for mutation events, or a newer `handle`
/// result needing the slot before this one was reduced (a `concat` queue).
package enum FeatureMutation: Sendable {
    /// A mutation that crossed into Swift: from a stream, an effect handler, or a
    /// table the in-place check left to the full validation.
    case value(LuaValue)
    /// The table `handle` returned, still in the feature's kept slot.
    case kept(KeptMutation)
}

/// The token for a mutation kept in Lua. `value` is filled (on the state
/// executor) only when the slot is wanted for a newer table before this one was
/// reduced; from then on the mutation travels as that copy.
package final class KeptMutation: @unchecked Sendable {
    var value: LuaValue?
    init() {}
}
