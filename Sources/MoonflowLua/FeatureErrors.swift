import LuaKit

/// Message and `file:line` of any error that reaches the user.
public enum FeatureErrors {
    public static func describe(_ error: any Error, fallback: String?) -> (String, String?) {
        switch error {
        case let e as LocatedError: return describe(e.underlying, fallback: e.location)
        case let e as LuaStreamError: return (e.description, e.location ?? fallback)
        case let e as LuaError:
            switch e {
            case .runtime(let message, let location, let traceback):
                return (traceback.isEmpty ? message : "\(message)\n\(traceback)", location ?? fallback)
            case .syntax(_, _, let message):
                return ("syntax error: \(message)", e.location ?? fallback)
            default: return (e.description, e.location ?? fallback)
            }
        case let e as SchemaError: return (e.message, fallback)
        case let e as DefinitionError: return (e.message, fallback)
        default: return (String(describing: error), fallback)
        }
    }
}

/// An error that happened in a known function: its own location wins when it has
/// one (a Lua error's `file:line`); otherwise `location`, where the function is
/// defined, names it (a memory limit, a value that cannot cross, a bad return).
public struct LocatedError: Error, Sendable, CustomStringConvertible {
    public let underlying: any Error
    public let location: String

    public init(_ error: any Error, at location: String) {
        if let located = error as? LocatedError { self = located; return }
        underlying = error
        self.location = location
    }

    public var description: String { String(describing: underlying) }
}
