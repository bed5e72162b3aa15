import Foundation
import LuaKit
import MoonflowLua
import Streams

/// A host for an app's UI, main-actor isolated by type: Lua runs on the main actor, and
/// `load`, `send`, `state` and `observe` are called there, so a call from another thread is a
/// compile error, not a deadlock or a trap (as TCA's `Store` is `@MainActor`).
///
///     @MainActor
///     func makeCart() throws -> FeatureViewModel<CartState, CartAction> {
///         let host = try MainActorHost(configuration: .init(searchPaths: ["plugins"]))
///         let cart = try host.load("cart")
///         cart.start()
///         return try cart.model(as: CartState.self, actions: CartAction.self)
///     }
///
/// `send` on the main actor has run `handle` and every synchronous mutation's `reduce` when
/// it returns. Actions another thread sends (through `host`'s features, say from a service)
/// are reduced on the main actor too, in slices of 4 ms, so the UI keeps drawing. It works
/// under a plain `main` with a run loop and under a Swift `async` main alike.
@MainActor
public final class MainActorHost {
    /// The host underneath, whose executor is `.mainActor`: what may be used from any thread
    /// (registering services and repositories, `connect(devServer:)`, `reload`).
    public nonisolated let host: FeatureHost

    /// - Parameter configuration: as for `FeatureHost`; its `executor` is `.mainActor` whatever
    ///   it says (on the virtual clock Lua runs on the main actor, which drives the clock).
    public init(configuration: FeatureHost.Configuration = .init()) throws {
        var configuration = configuration
        configuration.executor = .mainActor
        host = try FeatureHost(configuration: configuration)
    }

    /// Loads a plugin (a name on the search paths or a path): as `FeatureHost.load`, here.
    public func load(_ spec: String, initial: LuaValue? = nil) throws -> MainActorFeature {
        MainActorFeature(try host.load(spec, initial: initial))
    }
}

/// A feature of a `MainActorHost`: everything here runs on the main actor, and the
/// callbacks of `observe` are main-actor isolated.
@MainActor
public final class MainActorFeature {
    /// The feature underneath, for what another thread does with it (its `send` queues).
    public nonisolated let feature: RunningFeature

    package init(_ feature: RunningFeature) { self.feature = feature }

    /// The current state: every reduce so far.
    public var state: LuaValue { feature.state }

    /// Emits the initial state event; call once observers are attached.
    public func start() { feature.start() }

    /// Sends an action: validated at once (a bad one throws `FeatureError` and nothing is
    /// queued), then handled and its synchronous mutations reduced before this returns.
    public func send(_ action: LuaValue) throws { try feature.send(action) }

    /// Sends an `Encodable` enum case (a generated `Action`) as `{ type = "case", ...fields }`.
    public func send<A: Encodable>(case action: A) throws { try feature.send(case: action) }

    /// Sends an action given as JSON text, parsed straight into Lua.
    public func send(json: String) throws { try feature.send(json: json) }

    /// A view model of this feature: its state decoded into `View`, kept current, with
    /// two-way fields.
    /// - Throws: `FeatureError` of stage `.view` when the state does not decode into `View`.
    public func model<View: Decodable & Sendable, Action: Encodable & Sendable>(
        as type: View.Type = View.self, actions: Action.Type
    ) throws -> MainActorViewModel<View, Action> {
        try MainActorViewModel(mainActor: feature, as: type, actions: actions)
    }

    /// Waits until nothing is queued, running or in flight (Swift services included).
    /// - Throws: as `RunningFeature.idle()`: `CancellationError` as soon as the awaiting task is
    ///   cancelled, `FeatureError` when awaited inside a Swift service call on this host.
    public func idle() async throws { try await feature.idle() }

    /// Stops the feature: cancels what is in flight and ends its events. Idempotent.
    public func dispose() { feature.dispose() }
}
