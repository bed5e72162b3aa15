import LuaKit
import Streams

/// What a Lua function gave back where a stream may stand (a handler, an effect
/// handler, a service, a request, a stream operator's function): nothing, a
/// stream, or a plain value. The one place that tells these apart; each caller
/// decides what a plain value means (a mutation, `mf.just(value)`, an error).
enum ReturnedValue {
    /// No value, or nil; `described` is "nothing" or "nil", for messages.
    case nothing(described: String)
    /// An `mf` stream.
    case stream(Producer<LuaValue>)
    /// Any other value, still on the stack at the index asked for.
    case plain
}

extension LuaSlots {
    /// What is at `i`: nothing, a stream, or a plain value.
    func returned(_ i: Int) -> ReturnedValue {
        if count < i { return .nothing(described: "nothing") }
        if isNil(i) { return .nothing(described: "nil") }
        if let stream = object(i, as: LuaStream.self) { return .stream(stream.producer) }
        return .plain
    }
}
