import LuaKit

/// Message and `file:line` of any error that reaches the user.
extension LuaErrorReport {
    /// The error's message, `file:line` and traceback, kept apart.
    ///
    ///     let report = LuaErrorReport.of(error, fallback: "init.lua")
    ///     print(report.location ?? "?", report.message)
    ///
    /// - Parameters:
    ///   - error: Any error a feature, a plugin or the bridge threw.
    ///   - fallback: The location to name when the error knows none.
    /// - Returns: The message, the location (or `fallback`) and the traceback.
    package static func of(_ error: any Error, fallback: String?) -> LuaErrorReport {
        switch error {
        case let e as LocatedError: return of(e.underlying, fallback: e.location)
        case let e as FeatureError:
            return LuaErrorReport(message: e.message, location: e.location ?? fallback, traceback: e.traceback)
        case let e as LuaStreamError: return LuaErrorReport(parsing: e.description, location: e.location ?? fallback)
        case let e as LuaError:
            switch e {
            case .runtime(let message, let location, let traceback):
                return LuaErrorReport(message: message, location: location ?? fallback, traceback: traceback)
            case .syntax(_, _, let message):
                return LuaErrorReport(message: "syntax error: \(message)", location: e.location ?? fallback)
            default: return LuaErrorReport(parsing: e.description, location: e.location ?? fallback)
            }
        case let e as SchemaError: return LuaErrorReport(parsing: e.message, location: fallback)
        case let e as DefinitionError: return LuaErrorReport(parsing: e.message, location: fallback)
        default: return LuaErrorReport(parsing: String(describing: error), location: fallback)
        }
    }

    /// The error's message (its traceback on the lines after it) and `file:line`.
    ///
    ///     let (message, location) = LuaErrorReport.describe(error, fallback: nil)
    ///
    /// - Parameters:
    ///   - error: Any error a feature, a plugin or the bridge threw.
    ///   - fallback: The location to name when the error knows none.
    /// - Returns: The joined text and the location (or `fallback`).
    package static func describe(_ error: any Error, fallback: String?) -> (String, String?) {
        let report = of(error, fallback: fallback)
        return (report.text, report.location)
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
