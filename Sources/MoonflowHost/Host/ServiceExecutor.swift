import Foundation
import LuaKit
import Runtime

/// Where a blocking service's body runs: threads of its own, off Swift's shared cooperative
/// pool. Services registered without one run there, on one of its few threads (as many as
/// the machine has cores), so a body that blocks (a synchronous network, file or SQLite call)
/// holds a thread every other task needs: on 2 cores, four services blocking 1.5 s each held
/// another service and a 0.1 s `Task.sleep` for 2.1 s.
///
///     let io = ServiceExecutor.dedicatedThreads(4, label: "io")   // shared by both services
///     host.register(service: "rows", on: io) { args in try database.rows(args[0]) }
///     host.register(service: "file", on: io) { args in try LuaValue(string(at: args[0])) }
///
/// At most `count` bodies run at once; calls beyond that wait their turn, in call order, and a
/// call whose feature no longer wants it (disposed, cancelled) before its turn never runs.
/// The threads end once nothing holds the executor (the host is gone, or every service
/// registered on it was replaced) and the calls given to them have run.
public struct ServiceExecutor: Sendable {
    let executor: any Executor

    package init(_ executor: any Executor) { self.executor = executor }

    /// Up to `count` threads of the executor's own, started as calls need them.
    public static func dedicatedThreads(_ count: Int = 1, label: String = "moonflow.service") -> ServiceExecutor {
        ServiceExecutor(ThreadPoolExecutor(label: label, threads: count))
    }
}

extension FeatureHost {
    /// Registers a Swift service whose body blocks: it runs on `executor`'s threads, not on
    /// Swift's cooperative pool, and its result re-enters the host's state executor as any
    /// service's does (on the virtual clock, in call order).
    ///
    ///     host.register(service: "rows", on: .dedicatedThreads(2)) { args in try db.rows(args[0]) }
    ///
    /// A body that also awaits registers with `register(service:_:)` and hands its blocking
    /// part to the threads itself.
    public func register(
        service name: String, on executor: ServiceExecutor,
        _ body: @escaping @Sendable (_ arguments: [LuaValue]) throws -> LuaValue
    ) {
        let threads = executor.executor
        register(service: name) { args in try await threads.submit { try body(args) } }
    }

    /// Registers a blocking Swift service in `Codable` terms, run on `executor`'s threads: the
    /// first argument is decoded as `Input`, the result encoded from `Output`.
    public func register<Input: Decodable & SendableMetatype, Output: Encodable & SendableMetatype>(
        service name: String, on executor: ServiceExecutor, _ body: @escaping @Sendable (Input) throws -> Output
    ) {
        register(service: name, on: executor) { args in
            let input = try LuaValueDecoder().decode(Input.self, from: args.first ?? .nil)
            return try LuaValueEncoder().encode(try body(input))
        }
    }
}
