import Foundation
import MoonflowHost

/// A host's link to `moonflow serve`, which `connect(devServer:)` makes (docs/embedding.md,
/// "Developing in the running app"): the server's plugins are found first (messages name
/// them `dev:counter/init.lua`), every save reloads the features loaded from them, and their
/// events go to the server. Every member may be used from any thread.
public final class DevServerLink: Sendable {
    private let connection: DevServerConnection

    init(_ connection: DevServerConnection) { self.connection = connection }

    /// The server's URL, as `moonflow serve` printed it.
    public var url: URL { connection.url }

    /// Whether the server is connected now (the link tries again every second while it is away).
    public var isConnected: Bool { connection.isConnected }

    /// Stops talking to the server for good; the features keep their code.
    public func disconnect() { connection.disconnect() }
}

extension FeatureHost {
    /// Loads plugins from `moonflow serve` (an app's debug builds): plugins the server holds
    /// are found before the search paths, every save reloads the features loaded from them
    /// with their state kept, and their events show in the terminal that runs the server.
    ///
    ///     let host = try FeatureHost(configuration: .init(searchPaths: []))
    ///     try await host.connect(devServer: "http://127.0.0.1:8377/?token=…")   // what serve printed
    ///     let counter = try await host.load("counter")
    ///
    /// The caller's task waits without holding a thread: the link is made on a thread of its
    /// own. Nothing listening there (no server started, a wrong port) or a wrong token fails
    /// at once; a server that accepts but sends nothing fails after `timeout`; a cancelled
    /// task's wait ends at once (`CancellationError`) and the link is let go.
    /// - Parameters:
    ///   - address: the URL `moonflow serve` printed, token included.
    ///   - timeout: how long to wait for the server's files once connected.
    /// - Returns: the link (`isConnected`; `disconnect()` ends it).
    /// - Throws: `HostError` naming the address (its token left out) and the fix.
    @discardableResult
    public func connect(devServer address: String, timeout: TimeInterval = 10) async throws -> DevServerLink {
        DevServerLink(try await connectLink(devServer: address, timeout: timeout))
    }
}
