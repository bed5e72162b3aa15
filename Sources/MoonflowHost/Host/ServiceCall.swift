import Foundation
import MoonflowLua

/// The Swift service call the running task serves: what `idle()` asks to refuse a wait that
/// could never end. `idle()` waits for every service call in flight on the feature's host (its
/// Lua state), the caller's own among them, so a service that awaits `idle()` of a feature on
/// its own host (its own feature, a composite over it, a sibling) waits for itself.
final class ServiceCall: @unchecked Sendable {
    /// The service's registered name.
    let name: String
    /// The Lua state's bridge the call's result re-enters through.
    private let bridge: WeakBridge
    private let running = NSLock()
    /// Guarded by `running`.
    private var _ended = false

    /// Marks the running task as serving `name` for the duration of `body`. Tasks it starts
    /// inherit the mark; once `body` returns the mark no longer counts for them.
    static func serving<T>(
        _ name: String, through bridge: LuaBridge, _ body: () async throws -> T
    ) async rethrows -> T {
        let call = ServiceCall(name: name, bridge: bridge)
        defer { call.end() }
        return try await $current.withValue(call, operation: body)
    }

    @TaskLocal static var current: ServiceCall?

    private init(name: String, bridge: LuaBridge) {
        self.name = name
        self.bridge = WeakBridge(bridge)
    }

    private func end() { running.withLock { _ended = true } }

    /// Whether this call is still running and re-enters through `bridge`: then a wait for
    /// `bridge` to go idle waits for this call too.
    func isInFlight(on bridge: LuaBridge) -> Bool {
        !running.withLock { _ended } && self.bridge.value === bridge
    }
}

private struct WeakBridge: @unchecked Sendable {
    weak var value: LuaBridge?
    init(_ value: LuaBridge) { self.value = value }
}

extension RunningFeature {
    /// The error for `idle()` awaited where it would wait for its own caller: inside a Swift
    /// service call on this feature's host. Nil anywhere else.
    func reentrantIdle() -> FeatureError? {
        guard let bridge = (self as? any BridgedFeature)?.bridge, let call = ServiceCall.current,
            call.isInFlight(on: bridge)
        else { return nil }
        return FeatureError(
            stage: .service,
            message:
                "idle() of feature '\(name)' was awaited inside Swift service '\(call.name)', which runs on the same host: idle() waits for every service call in flight there, this one too, so it would never return. Do not await idle() from a service of a feature on the same host; return the service's result, or send an action (feature.send) and let the feature go on",
            service: call.name)
    }
}
