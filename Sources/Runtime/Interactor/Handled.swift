import Streams

/// What handling one action produced: nothing, mutations right now, or a stream of mutations.
///
///     handle: { action, state in
///         switch action {
///         case .increment: .one(.add(1))                       // synchronous: no stream is built
///         case .load: .stream(service.load().map(Mutation.loaded))
///         }
///     }
///
/// The synchronous cases are the loop's fast path: they are reduced at once, in order, before the
/// next action is handled, without allocating a `Producer`.
public enum Handled<Mutation: Sendable>: Sendable {
    /// No mutation.
    case none
    /// One mutation, reduced at once.
    case one(Mutation)
    /// Several mutations, reduced at once in order.
    case many([Mutation])
    /// A stream of mutations; its synchronous values are reduced before the next action is handled,
    /// later ones when they arrive.
    case stream(Producer<Mutation>)
}
