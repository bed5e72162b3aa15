extension Interactor {
    /// A value the loop produced, with the action whose handling (directly or through internal
    /// effects) produced it.
    ///
    ///     interactor.effects.observe(value: { traced in print(traced.value, "from", traced.action) })
    public struct Traced<Value: Sendable>: Sendable {
        /// The action, mutation or effect.
        public let value: Value
        /// The sent action it came from.
        public let action: Action
        /// That action's number: 1 for the first `send`, counting up in the order sends arrive.
        public let actionID: Int

        @inlinable
        init(value: Value, action: Action, actionID: Int) {
            self.value = value
            self.action = action
            self.actionID = actionID
        }
    }

    /// A handler stream, an effect stream or a queued (`concat`) handling that has not finished.
    ///
    ///     for flight in interactor.inFlight { print("\(flight.actionType) #\(flight.actionID) still running") }
    public struct InFlight: Sendable {
        /// What is unfinished.
        public enum Kind: Sendable {
            /// The stream `handle` returned.
            case handler
            /// The stream the effect handler returned for this effect.
            case effect(Effect)
            /// A `concat` handling waiting for the previous one of its type.
            case queued
        }

        /// The action that started it.
        public let action: Action
        /// That action's number (see `Traced.actionID`).
        public let actionID: Int
        /// That action's type name.
        public let actionType: String
        public let kind: Kind
    }

    /// An error the loop caught; it did not end the loop.
    ///
    ///     interactor.errors.observe(value: { failure in log("\(failure.stage) failed for \(failure.action): \(failure.error)") })
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// Where the error happened.
        public enum Stage: String, Sendable {
            /// A stream returned by `handle` failed.
            case handle
            /// The reducer threw; the state was left as it was before that mutation.
            case reduce
            /// A stream returned by the effect handler failed.
            case effect
        }

        /// The error thrown or sent.
        public let error: any Error
        /// The action that caused it.
        public let action: Action
        /// That action's number (see `Traced.actionID`).
        public let actionID: Int
        public let stage: Stage

        @usableFromInline
        init(error: any Error, action: Action, actionID: Int, stage: Stage) {
            self.error = error
            self.action = action
            self.actionID = actionID
            self.stage = stage
        }

        public var description: String { "\(stage) failed for action #\(actionID) \(action): \(error)" }
    }
}
