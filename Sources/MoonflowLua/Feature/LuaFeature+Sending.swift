import LuaKit
import Runtime

// What callers on any thread do with a feature: send an action (a value or JSON text),
// check one, cancel work in flight, ask whether the loop is idle and what runs.
extension LuaFeature {
    /// Validates `action` against the declared actions and queues it.
    ///
    /// - Throws: `SchemaError` naming the action, the field and the expected type;
    ///   nothing is queued and the state is not touched.
    package func send(_ action: LuaValue) throws {
        try refusing(action) { try queue(action) }
    }

    /// Checks `action` against the declared actions and queues it (inside `refusing`).
    private func queue(_ action: LuaValue) throws {
        _ = try bindingLock.withLock { try $0.actions.validate(action) }  // in place: no copy of the schema
        interactor.send(.value(action))
    }

    /// Checks `action` as `send` would and throws what it would throw; queues nothing.
    /// (`moonflow run` records an input only once it is sure the feature takes it.)
    package func check(_ action: LuaValue) throws {
        try refusing(action) { _ = try bindingLock.withLock { try $0.actions.validate(action) } }
    }

    /// Runs a send: what it throws (a refused or malformed action) is a `FeatureError` of
    /// stage `.send`, and a disposed feature refuses every action.
    private func refusing(_ action: LuaValue?, _ body: () throws -> Void) throws {
        guard !isDisposed else {
            // Any thread may send: the name is read under the lock a reload's rebind takes.
            let name = bindingLock.withLock { _ in _binding.definition.name }
            throw FeatureError(
                stage: .send, action: action,
                message: "feature '\(name)' was disposed; it takes no more actions (load it again)")
        }
        guard !bridge.lua.isStuck else {
            throw FeatureError.stuck(feature: bindingLock.withLock { _ in _binding.definition.name }, action: action)
        }
        do { try body() } catch { throw FeatureError(refused: error, action: action) }
    }

    /// Parses `json` straight into a Lua table, checks it against the declared actions and
    /// queues it: `handle` gets that very table, and no `LuaValue` is made unless someone
    /// asks for the action (an action event, an error, `inFlight`).
    ///
    ///     try feature.send(json: #"{"type":"add","title":"milk"}"#)
    ///
    /// A flat action (`type` and fields of plain values) is checked in place; any other is
    /// copied once to be checked in full, and still handled as the table parsed.
    ///
    /// - Throws: `JSONError` with the line and column of a mistake in the text, or
    ///   `SchemaError` naming the action, the field and the expected type; nothing is
    ///   queued and the state is not touched.
    package func send(json: String) throws {
        var text = json
        try refusing(nil) { try text.withUTF8 { try send(jsonBuffer: UnsafeRawBufferPointer($0)) } }
    }

    /// Parses the UTF-8 `json` straight into a Lua table and queues it: `send(json:)` for bytes.
    package func send(json: [UInt8]) throws {
        try refusing(nil) { try json.withUnsafeBytes { try send(jsonBuffer: $0) } }
    }

    func send(jsonBuffer: UnsafeRawBufferPointer) throws {
        guard bridge.isOnExecutor else {
            // Another thread: parsed here and queued, as `send(_:)` does. Parsing into Lua
            // would wait for the state executor, which may be waiting for this thread.
            return try queue(LuaValue(jsonBytes: UnsafeRawBufferPointer(jsonBuffer).bindMemory(to: UInt8.self)))
        }
        let action: FeatureAction = try bridge.perform {
            let actions = definition.actions
            return try bridge.lua.withJSON(jsonBuffer) { slots in
                if let type = slots.matchedType(1, actions.flat) {
                    return .table(LuaTableAction(type: type, table: try slots.ref(1), bridge: bridge))
                }
                let value = try slots.value(1, path: "action")
                let type = try actions.validate(value)
                return .table(
                    LuaTableAction(type: .string(type), table: try slots.ref(1), bridge: bridge, value: value))
            }
        }
        interactor.send(action)
    }

    /// Cancels in-flight work (all of it, or that of one action type).
    package func cancel(actionType: String? = nil) {
        if let actionType { interactor.cancel(actionType: actionType) } else { interactor.cancelAll() }
    }

    /// Whether the loop has nothing queued or running.
    package var isIdle: Bool { interactor.isIdle }

    /// The handler and effect streams still running, each with the action that started it.
    package var inFlight: [FeatureFlight] {
        interactor.inFlight.map { flight in
            switch flight.kind {
            case .handler:
                FeatureFlight(
                    action: flight.action.value, what: "the stream handle returned", actionID: flight.actionID)
            case .effect(let e):
                FeatureFlight(
                    action: flight.action.value, what: "the handler of effect '\(e["type"]?.stringValue ?? "?")'",
                    actionID: flight.actionID, tag: "effect \(e["type"]?.stringValue ?? "?")")
            case .queued:
                FeatureFlight(
                    action: flight.action.value, what: "a queued (concat) handling", actionID: flight.actionID,
                    tag: "queued")
            }
        }
    }
}
