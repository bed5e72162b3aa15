import Foundation
import LuaKit
import MoonflowLua
import Observation

/// A running feature as a SwiftUI view model: the state decoded into `View`,
/// kept current on the main actor, with sending and the last error.
///
///     struct CartView: Decodable, Sendable { let items: [String]; let total: Int }
///
///     @MainActor
///     func makeModel(host: FeatureHost) async throws -> FeatureViewModel<CartView> {
///         let cart = try await host.load("cart")
///         cart.start()
///         return try FeatureViewModel(cart, as: CartView.self)
///     }
///     // In a SwiftUI view: Text("\(model.view.total)"); Button("Add") { try? model.send(["type": "add"]) }
///
/// It observes the feature for as long as it lives (or until `stop()`), on
/// the main actor. A state that does not decode into `View` leaves `view` as
/// it was and sets `decodingError`.
@MainActor
@Observable
public final class FeatureViewModel<View: Decodable & Sendable> {
    /// The latest state, decoded.
    public private(set) var view: View
    /// The last error the feature reported (cleared by `clearError()`).
    public private(set) var lastError: FeatureError?
    /// Why the latest state did not decode into `View`, if it did not.
    public private(set) var decodingError: String?

    @ObservationIgnored private let feature: RunningFeature
    @ObservationIgnored private var tasks: [Task<Void, Never>] = []

    /// - Throws: when the current state does not decode into `View`.
    public init(_ feature: RunningFeature, as type: View.Type = View.self) throws {
        self.feature = feature
        view = try LuaValueDecoder().decode(View.self, from: feature.state)
        let states = feature.states
        let errors = feature.errors
        tasks.append(Task { @MainActor [weak self] in
            for await state in states {
                guard let self else { return }
                self.apply(state)
            }
        })
        tasks.append(Task { @MainActor [weak self] in
            for await error in errors {
                guard let self else { return }
                self.lastError = error
            }
        })
    }

    isolated deinit {
        for task in tasks { task.cancel() }
    }

    /// Sends an action (validated at once: a bad action throws and nothing is queued).
    public func send(_ action: LuaValue) throws { try feature.send(action) }

    /// Sends an action given as JSON text (a web view's message, say), parsed straight into Lua.
    public func send(json: String) throws { try feature.send(json: json) }

    /// Sends an `Encodable` enum case as `{ type = "case", ...fields }`.
    public func send<A: Encodable>(case action: A) throws { try feature.send(case: action) }

    public func clearError() { lastError = nil }

    /// Stops observing (the feature itself keeps running).
    public func stop() {
        for task in tasks { task.cancel() }
        tasks = []
    }

    private func apply(_ state: LuaValue) {
        do {
            view = try LuaValueDecoder().decode(View.self, from: state)
            decodingError = nil
        } catch {
            decodingError = "the state does not decode into \(View.self): \(error)"
        }
    }
}
