import Foundation
import MoonflowHost
import MoonflowTesting
import ShopExample
import Testing

/// The shop's checkout under Swift Testing's parallel run: the async test store drives the
/// Lua composite with the payment provider stubbed in Swift (a Codable closure), and the app
/// itself runs on the main actor. The cart clearing on the receipt is Lua's (`react`).
@Suite struct CheckoutTests {
    typealias Store = TypedFeatureStore<CheckoutState, CheckoutAction>
    typealias Receipt = CheckoutApp.Receipt

    static let pen = CheckoutState.LinesItem(sku: "pen", name: "Pen", price: 150, qty: 1)

    /// A store whose provider answers after `latency` of real time, as a network call would.
    static func store(latency: Duration = .milliseconds(20)) throws -> Store {
        try Store(
            "checkout", searchPaths: [CheckoutApp.bundledPlugins],
            services: [
                .stub("charge") { (amount: Int) async throws -> Receipt in
                    try await Task.sleep(for: latency)
                    return Receipt(id: "r-\(amount)", amount: amount)
                }
            ])
    }

    @Test func theReceiptClearsTheCartThenGoesOut() async throws {
        let store = try Self.store()
        try await store.send(.add(sku: "pen", name: "Pen", price: 150)) {
            $0.lines = [Self.pen]
            $0.total = 150
        }
        try await store.send(.pay) { $0.payment = .paying }
        try await store.receive(PaymentMutation.paid(id: "r-150", amount: 150)) {
            $0.payment = .paid
            $0.receipt = "r-150"
        }
        // What `react` sent to the cart, reduced before the receipt goes out.
        try await store.receive(CartMutation.cleared) {
            $0.lines = []
            $0.total = 0
        }
        try await store.receiveEffect(PaymentEffect.receipt(id: "r-150", amount: 150), from: "payment")
        try await store.finish()
    }

    @Test func aDeclinedChargeKeepsTheCart() async throws {
        struct Declined: Error, CustomStringConvertible { var description: String { "card declined" } }
        let store = try Store(
            "checkout", searchPaths: [CheckoutApp.bundledPlugins],
            services: [.stub("charge") { (_: Int) async throws -> Receipt in throw Declined() }])
        try await store.send(.add(sku: "pen", name: "Pen", price: 150)) {
            $0.lines = [Self.pen]
            $0.total = 150
        }
        try await store.send(.pay) { $0.payment = .paying }
        let reason = "service 'charge' failed: card declined"
        try await store.receive(PaymentMutation.declined(reason: reason)) {
            $0.payment = .idle
            $0.declined = reason
        }
        try await store.finish()
    }

    /// Twelve checkouts at once on two cores, each waiting for its provider on the shared
    /// pool: none blocks a thread while it waits, so all finish.
    @Test(arguments: 1...12) func manyCheckoutsAtOnce(qty: Int) async throws {
        let store = try Self.store(latency: .milliseconds(5 * qty))
        try await store.send(.add(sku: "pen", name: "Pen", price: 150)) {
            $0.lines = [Self.pen]
            $0.total = 150
        }
        try await store.send(.setQty(sku: "pen", qty: qty)) {
            $0.lines[0].qty = qty
            $0.total = 150 * qty
        }
        try await store.send(.pay) { $0.payment = .paying }
        let id = "r-\(150 * qty)"
        try await store.receive(PaymentMutation.paid(id: id, amount: 150 * qty)) {
            $0.payment = .paid
            $0.receipt = id
        }
        try await store.receive(CartMutation.cleared) {
            $0.lines = []
            $0.total = 0
        }
        try await store.receiveEffect(PaymentEffect.receipt(id: id, amount: 150 * qty))
        try await store.finish()
    }

    /// The app as a screen runs it: a main-actor host, the provider a Swift closure.
    @MainActor @Test func theAppShowsAnEmptyCartAndTheReceipt() async throws {
        let app = try CheckoutApp { amount in
            try await Task.sleep(for: .milliseconds(10))
            return Receipt(id: "r-\(amount)", amount: amount)
        }
        app.add(sku: "pen", name: "Pen", price: 150)
        app.add(sku: "pen", name: "Pen", price: 150)
        app.ship(to: "Ada", street: "1 Engine Row", city: "London")
        #expect(app.model.view.total == 300)
        #expect(app.model.view.address == "Ada, 1 Engine Row, London")
        app.pay()
        try await app.feature.idle()
        #expect(app.model.view.lines.isEmpty)
        #expect(app.model.view.payment == .paid)
        #expect(app.receipts == [Receipt(id: "r-300", amount: 300)])
        #expect(app.model.lastError == nil)
    }
}
