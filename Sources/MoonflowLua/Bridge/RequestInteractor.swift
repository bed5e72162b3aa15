import LuaKit
import Streams

/// An `mf.interactor{ name, requests = { paginate = function(request, env) ... end } }`
/// as Lua features see it: `env.interactors.NAME:perform{ type = "paginate", page = 2 }`
/// returns a stream with the response. An unknown request type fails the stream
/// naming the types it handles; every failure is also logged with its source location.
package final class RequestInteractor: @unchecked Sendable {
    package let definition: FeatureDefinition
    /// Weak: the interactor is a userdata (`env.interactors.NAME`) of the state the bridge owns.
    private weak var bridge: LuaBridge?
    package var env: LuaRef?
    /// Where failures are logged: (message, file:line).
    package var log: @Sendable (String, String?) -> Void = { _, _ in }

    package init(definition: FeatureDefinition, bridge: LuaBridge) {
        self.definition = definition
        self.bridge = bridge
    }

    /// The response stream for `request` (a table with a string `type`).
    /// - Parameter caller: `file:line` of the code that asked, for the log of a refused request.
    package func perform(_ request: LuaValue, caller: String? = nil) -> Producer<LuaValue> {
        let name = definition.name
        let type = request["type"]?.stringValue ?? "?"
        let log = self.log
        let stream: Producer<LuaValue>
        // A malformed or unknown request is a failure like any other: logged below.
        if bridge == nil {
            stream = .fail(
                LuaStreamError(
                    message: "interactor '\(name)': its Lua state is gone (the host was released)", location: caller))
        } else if request["type"]?.stringValue == nil {
            stream = .fail(
                LuaStreamError(
                    message:
                        "interactor '\(name)': a request needs a string 'type'; it handles: \(definition.requests.joined(separator: ", "))",
                    location: caller))
        } else if !definition.requests.contains(type) {
            stream = .fail(
                LuaStreamError(
                    message:
                        "interactor '\(name)' has no request '\(type)'; it handles: \(definition.requests.joined(separator: ", "))",
                    location: caller))
        } else {
            do {
                let bridge = try self.bridge.alive()
                stream = try bridge.lua.call(
                    bridge.dispatch.request,
                    [
                        .ref(definition.table), .value(.string(LuaString(type))), .value(request),
                        env.map { .ref($0) } ?? .value(.nil),
                    ]
                ) { slots in
                    switch slots.returned(1) {
                    case .stream(let producer):
                        return producer
                    case .nothing(let described):
                        let at = definition.locations["requests.\(type)"]
                        throw LuaStreamError(
                            message:
                                "interactor '\(name)': request '\(type)'\(at.map { " (\($0))" } ?? "") returned \(described); return a stream of the response, or the response itself",
                            location: at)
                    case .plain:
                        return .just(try slots.value(1, path: "response"))
                    }
                }
            } catch {
                stream = .fail(error)
            }
        }
        return stream.catchError { error in
            let (message, location) = LuaErrorReport.describe(error, fallback: nil)
            log("interactor '\(name)' request '\(type)' failed: \(message)", location)
            return .fail(error)
        }
    }

    package static func methods(_ bridge: LuaBridge) -> [String: LuaFunction] {
        [
            "perform": { [unowned bridge] args in
                guard let interactor = args.object(1, as: RequestInteractor.self) else {
                    throw args.bad(1, "perform", "interactor")
                }
                return [
                    bridge.push(interactor.perform(try args.value(2, path: "request"), caller: args.callerLocation))
                ]
            }
        ]
    }
}
