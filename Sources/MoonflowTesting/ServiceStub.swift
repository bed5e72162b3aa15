import LuaKit
import MoonflowHost

/// A Swift service a test store's feature calls, stubbed in the test's own types: the
/// argument Lua passes is decoded as `Input`, the answer encoded from `Output`, as
/// `FeatureHost.register(service:_:)` does for an app.
///
///     let store = try TypedFeatureStore<ShopState, ShopAction>(
///         "shop",
///         services: [
///             .stub("products") { (page: Int) async throws -> [Product] in
///                 try await Task.sleep(for: .milliseconds(20))
///                 return page == 1 ? [Product(sku: "tea", price: 4)] : []
///             }
///         ])
///
/// The feature calls it as `env.services.products(page)`; a stub that throws fails the
/// feature's stream as the real service would (`catchError` in Lua sees the error).
public struct ServiceStub: Sendable {
    /// The name the feature calls it by (`env.services.NAME`).
    public let name: String
    private let install: @Sendable (FeatureHost) -> Void

    private init(name: String, install: @escaping @Sendable (FeatureHost) -> Void) {
        self.name = name
        self.install = install
    }

    /// A service of one argument, decoded as `Input`; its answer is encoded from `Output`.
    public static func stub<Input: Decodable & SendableMetatype, Output: Encodable & SendableMetatype>(
        _ name: String, _ service: @escaping @Sendable (Input) async throws -> Output
    ) -> ServiceStub {
        ServiceStub(name: name) { $0.register(service: name, service) }
    }

    /// A service called without arguments (`env.services.NAME()`).
    public static func stub<Output: Encodable & SendableMetatype>(
        _ name: String, _ service: @escaping @Sendable () async throws -> Output
    ) -> ServiceStub {
        let answer: LuaService = { _ in try LuaValueEncoder().encode(try await service()) }
        return ServiceStub(name: name) { $0.register(service: name, answer) }
    }

    /// A service in `LuaValue` terms: every argument as Lua passed it.
    public static func service(_ name: String, _ service: @escaping LuaService) -> ServiceStub {
        ServiceStub(name: name) { $0.register(service: name, service) }
    }

    /// Registers the service on `host`, replacing any of the same name.
    func register(on host: FeatureHost) { install(host) }
}
