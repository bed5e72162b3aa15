import LuaKit

/// What a stream failure carries when it started in Lua: `mf.fail(v)`, an error
/// raised by a callback, or a service failure. `catchError` hands `value` to Lua.
public struct LuaStreamError: Error, Sendable, CustomStringConvertible {
    /// The error as Lua sees it (usually a message string).
    public let value: LuaValue
    /// `file:line` where it was raised, when known.
    public let location: String?
    /// The service whose call failed, when it was one.
    public let service: String?
    /// What a Swift service threw.
    public let underlying: (any Error)?

    /// A failure with a message (what Lua's `catchError` gets as a string).
    public init(message: String, location: String? = nil) {
        self.init(.string(LuaString(message)), location: location)
    }

    public init(_ value: LuaValue, location: String? = nil, service: String? = nil, underlying: (any Error)? = nil) {
        self.value = value
        self.location = location
        self.service = service
        self.underlying = underlying
    }

    public init(_ error: any Error) {
        switch error {
        case let e as LuaStreamError: self = e
        case let e as LocatedError:
            let inner = LuaStreamError(e.underlying)
            self.init(inner.value, location: inner.location ?? e.location)
        case let e as LuaError: self.init(.string(LuaString(e.message)), location: e.location)
        default: self.init(.string(LuaString(String(describing: error))), underlying: error)
        }
    }

    /// A Swift service's failure: the message names the service; the error is kept as thrown.
    public init(service: String, error: any Error, location: String? = nil) {
        if let e = error as? LuaStreamError { self = e; return }
        self.init(
            .string(LuaString("service '\(service)' failed: \(error)")), location: location, service: service,
            underlying: error)
    }

    public var description: String {
        if case .string(let s) = value { return s.description }
        return value.description
    }
}
