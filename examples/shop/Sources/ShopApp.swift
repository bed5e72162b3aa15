import Foundation
import MoonflowHost  // the host, view models, and decoding the generated types
import MoonflowHostTools  // observe: each receipt as it goes out

/// A checkout screen written in Lua (`plugins/checkout`: an `mf.compose` of a cart, an
/// address and a payment) and driven from Swift. The cart empties when the payment's receipt
/// comes: that is the composite's `react` in Lua, not glue here, so the Lua spec
/// (`plugins/checkout/spec`) and the async Swift test store (`ShopExampleTests`) both test it.
/// The app brings what Lua cannot: the payment provider, a Swift service named `charge`.
///
///     let app = try CheckoutApp { amount in try await provider.charge(cents: amount) }
///     app.add(sku: "pen", name: "Pen", price: 150)
///     app.pay()                        // later: app.model.view.lines == [], app.receipts == [...]
@MainActor
public final class CheckoutApp {
    // CheckoutState, CheckoutAction, PaymentEffect, ... are generated from the plugins'
    // declarations (Generated/Checkout.swift: `moonflow types --swift examples/shop/plugins/checkout`).

    /// What the payment provider answers for a charge.
    public struct Receipt: Codable, Equatable, Sendable {
        public var id: String
        public var amount: Int
        public init(id: String, amount: Int) {
            self.id = id
            self.amount = amount
        }
    }

    public let host: MainActorHost
    public let feature: MainActorFeature
    public let model: MainActorViewModel<CheckoutState, CheckoutAction>
    /// The receipts that went out of the checkout, in order (the app would show a confirmation).
    public private(set) var receipts: [Receipt] = []
    private var receiptsToken: ObservationToken?

    /// The plugins this example ships (`examples/shop/plugins`, copied into the module's bundle).
    public nonisolated static var bundledPlugins: String {
        Bundle.module.resourceURL!.appendingPathComponent("plugins").path
    }

    /// - Parameters:
    ///   - plugins: the folder that holds `checkout`, `cart`, `address` and `payment`.
    ///   - charge: the payment provider: charges an amount (in cents) and answers a receipt.
    public init(
        plugins: String = CheckoutApp.bundledPlugins,
        charge: @escaping @Sendable (Int) async throws -> Receipt
    ) throws {
        host = try MainActorHost(configuration: .init(searchPaths: [plugins]))
        host.host.register(service: "charge") { (amount: Int) in try await charge(amount) }
        feature = try host.load("checkout")
        model = try feature.model(as: CheckoutState.self, actions: CheckoutAction.self)
        receiptsToken = feature.observe(kinds: .effect) { [weak self] event in
            guard case .effect(let value, _) = event,
                case .receipt(let id, let amount)? = try? value.decode(as: PaymentEffect.self)
            else { return }
            self?.receipts.append(Receipt(id: id, amount: amount))
        }
        feature.start()
    }

    public func add(sku: String, name: String, price: Int) { model.send(.add(sku: sku, name: name, price: price)) }
    public func setQty(sku: String, qty: Int) { model.send(.setQty(sku: sku, qty: qty)) }
    public func ship(to name: String, street: String, city: String) {
        model.send(.setAddress(name: name, street: street, city: city))
    }
    /// Charges the total; the cart empties and a receipt arrives when the provider answers.
    public func pay() { model.send(.pay) }
}
