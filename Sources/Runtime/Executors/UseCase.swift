/// One application use case with one `execute`, run on an injectable executor (Harmony's interactor).
///
///     let now = UseCase<Void, Int>(executor: .serial("clock")) { _ in 1_700_000_000 }
///     let elapsed = UseCase<Int, Int>(executor: .serial("clock")) { since in
///         try now.execute(()) - since           // nested, blocking: runs inline, no deadlock
///     }
///     let seconds = try await elapsed.execute(1_699_999_000)
///
/// **Threading**: `execute` is callable from any thread or task. The async form suspends while the
/// body runs on the executor; the synchronous form blocks, and runs inline when the caller is
/// already inside the same executor (nested use cases on one serial executor).
public struct UseCase<Input: Sendable, Output: Sendable>: Sendable {
    /// Where `execute` runs the body unless told otherwise.
    public let executor: any Executor
    private let body: @Sendable (Input) throws -> Output

    /// Creates a use case.
    ///
    /// - Parameters:
    ///   - executor: The default executor for `execute`.
    ///   - body: The use case's work; synchronous, so it can compose other use cases by blocking.
    public init(executor: any Executor = DirectExecutor.shared, _ body: @escaping @Sendable (Input) throws -> Output) {
        self.executor = executor
        self.body = body
    }

    /// Runs the use case on its executor (or `executor`) and suspends until it finishes.
    ///
    ///     let user = try await getUser.execute(42)
    ///
    /// - Parameters:
    ///   - input: The use case's input.
    ///   - executor: Overrides the default executor for this call.
    /// - Returns: The body's result.
    /// - Throws: The body's error, or `CancellationError` when the task was already cancelled.
    @discardableResult
    public func execute(_ input: Input, on executor: (any Executor)? = nil) async throws -> Output {
        let body = self.body
        return try await (executor ?? self.executor).submit { try body(input) }
    }

    /// Runs the use case on its executor (or `executor`) and blocks until it finishes.
    ///
    /// The form to call from inside another use case's body (Harmony's `invoke(...).get()`);
    /// when already running inside the target executor, the body runs inline.
    ///
    ///     let count = try countUsers.execute(())
    ///
    /// - Parameters:
    ///   - input: The use case's input.
    ///   - executor: Overrides the default executor for this call.
    /// - Returns: The body's result.
    /// - Throws: The body's error.
    @discardableResult
    public func execute(_ input: Input, on executor: (any Executor)? = nil) throws -> Output {
        try (executor ?? self.executor).perform { try body(input) }
    }
}
