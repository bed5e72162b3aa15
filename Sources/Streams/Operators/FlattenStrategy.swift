/// How `flatMap` combines the inner streams it creates: a value, not a family of methods.
///
/// ```swift
/// searches.flatMap(.latest) { query in api.search(query) }    // newest search wins
/// saves.flatMap(.concat) { draft in api.save(draft) }         // one save at a time, in order
/// ```
public struct FlattenStrategy: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Sendable, Hashable {
        /// Up to `limit` inners run at once; the others wait in arrival order.
        case concurrent(limit: Int)
        /// A new inner cancels the running one.
        case latest
        /// While an inner runs, new outer values are dropped.
        case exhaust
    }

    let kind: Kind

    /// Every inner runs at once; values interleave as they arrive.
    public static let merge = FlattenStrategy(kind: .concurrent(limit: .max))

    /// One inner at a time, in the order the outer values arrived; the others wait.
    public static let concat = FlattenStrategy(kind: .concurrent(limit: 1))

    /// Only the newest inner runs: each outer value cancels the previous inner (RxSwift's
    /// `flatMapLatest`, ReactiveSwift's `.latest`).
    public static let latest = FlattenStrategy(kind: .latest)

    /// While an inner runs, outer values are ignored (RxSwift's `flatMapFirst`).
    public static let exhaust = FlattenStrategy(kind: .exhaust)

    /// At most `limit` inners run at once; further ones wait and start, in arrival order, as
    /// running ones complete.
    ///
    /// ```swift
    /// downloads.flatMap(.concurrent(limit: 3)) { url in fetch(url) }
    /// ```
    ///
    /// - Parameter limit: The most inners alive at once; must be positive.
    /// - Returns: The strategy.
    public static func concurrent(limit: Int) -> FlattenStrategy {
        precondition(limit > 0, "the concurrency limit must be positive")
        return FlattenStrategy(kind: .concurrent(limit: limit))
    }

    /// The names `init(name:)` takes.
    public static let names = ["merge", "latest", "concat", "exhaust"]

    /// The strategy with a Lua-facing name: `"merge"`, `"latest"`, `"concat"` or `"exhaust"`.
    ///
    /// ```swift
    /// FlattenStrategy(name: "latest")   // .latest
    /// ```
    ///
    /// - Parameter name: The name; other names give `nil`.
    public init?(name: String) {
        switch name {
        case "merge": self = .merge
        case "concat": self = .concat
        case "latest": self = .latest
        case "exhaust": self = .exhaust
        default: return nil
        }
    }

    /// How many inners may run at once: `Int.max` for `.merge`, 1 for `.concat`, `limit` for
    /// `.concurrent(limit:)`; nil for `.latest` and `.exhaust`, which are not bounded by a count.
    ///
    /// ```swift
    /// FlattenStrategy.concurrent(limit: 3).concurrencyLimit   // 3
    /// ```
    public var concurrencyLimit: Int? {
        if case .concurrent(let limit) = kind { return limit }
        return nil
    }

    private init(kind: Kind) {
        self.kind = kind
    }

    /// The Lua-facing name, or `concurrent(N)` for other limits.
    public var description: String {
        switch kind {
        case .concurrent(limit: .max): return "merge"
        case .concurrent(limit: 1): return "concat"
        case .concurrent(let limit): return "concurrent(\(limit))"
        case .latest: return "latest"
        case .exhaust: return "exhaust"
        }
    }
}
