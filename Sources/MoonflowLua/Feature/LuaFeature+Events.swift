import LuaKit

// Who caused the event being delivered right now (an outlet listener asks), and the
// error, action and log events a feature sends.
extension LuaFeature {
    func delivering(cause: FeatureAction, id: Int, _ body: () -> Void) {
        deliveringCause = cause
        deliveringCauseID = id
        defer { deliveringCause = nil }
        body()
    }

    /// Which action `eventCause` is when two are equal (two `load`s in flight): its number in
    /// this feature's loop, as text; or the event's own action's, for an action event. Read it
    /// from an `outlet` listener, beside `eventCause`.
    package var eventCauseID: String? {
        if deliveringCause != nil { return String(deliveringCauseID) }
        let id = interactor.actionIDAtWork
        return id > 0 ? String(id) : nil
    }

    /// The action behind the event being delivered right now: a mutation's, a
    /// state's, an effect's or an error's. Read it from an `outlet` listener.
    package var eventCause: LuaValue? {
        if let deliveringCause { return deliveringCause.value }
        // Inside a step's handle the loop already says the action is being reduced: as for a
        // `handle` call of its own, an event from there (a log) has no cause.
        if stepping, bridge.lua.exchangeCounter(dispatch.stepStage, at: 1) == StepStage.handling.rawValue { return nil }
        return interactor.actionBeingReduced?.value
    }

    /// The error behind the `.error` event being delivered right now, with its
    /// stage, action and underlying Swift error. Read it from an `outlet` listener.
    package var eventError: FeatureError? { deliveringError }

    func report(_ error: any Error, stage: FeatureError.Stage, action: LuaValue?) {
        let (message, location) = LuaErrorReport.describe(error, fallback: source)
        deliveringError = bridge.relative(FeatureError.from(error, stage: stage, action: action, fallback: source))
        defer { deliveringError = nil }
        _ = takePending()  // as for an effect: a listener reading `state` sees what came before
        outlet.send(.error(message: bridge.relative(message), location: location.map(bridge.relative)))
    }

    /// Reports an error that happened outside the loop (a failed reload) as an `.error` event.
    package func report(outside error: any Error, stage: FeatureError.Stage) {
        report(error, stage: stage, action: nil)
    }

    /// Reports a log line (an interactor's failure) as a `.log` event.
    package func log(_ message: String, location: String?) {
        outlet.send(.log(message: message, location: location))
    }
}
