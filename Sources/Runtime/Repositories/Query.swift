/// A query as plain data: field equalities (all must hold), an ordering, an offset and a limit.
///
///     let query = Query.where("team", equals: "core").sorted(by: "age", ascending: false).limited(to: 10)
///     let rows = try repository.getAll(query)
///
/// Plain data on purpose: a SQLite repository turns it into `WHERE ... ORDER BY ... LIMIT`, and
/// the Lua bridge builds it from a table.
public struct Query: Sendable, Hashable, Codable, CustomStringConvertible {
    /// One equality: the record's `field` equals `value`.
    public struct Filter: Sendable, Hashable, Codable {
        public var field: String
        public var value: RecordValue
        public init(field: String, value: RecordValue) { self.field = field; self.value = value }
    }

    /// One sort key; later keys break ties of earlier ones.
    public struct Order: Sendable, Hashable, Codable {
        public var field: String
        public var ascending: Bool
        public init(field: String, ascending: Bool = true) { self.field = field; self.ascending = ascending }
    }

    public var filters: [Filter]
    public var order: [Order]
    public var limit: Int?
    public var offset: Int

    /// Creates a query; every part is optional.
    ///
    /// - Parameters:
    ///   - filters: Equalities that must all hold.
    ///   - order: Sort keys (none keeps the repository's insertion order).
    ///   - limit: The most results to return.
    ///   - offset: How many matching results to skip first.
    public init(filters: [Filter] = [], order: [Order] = [], limit: Int? = nil, offset: Int = 0) {
        self.filters = filters
        self.order = order
        self.limit = limit
        self.offset = offset
    }

    /// Every record, in insertion order.
    public static let all = Query()

    /// Records whose `field` equals `value`.
    ///
    /// - Parameters:
    ///   - field: A field name.
    ///   - value: The value it must equal.
    /// - Returns: A query with one filter.
    public static func `where`(_ field: String, equals value: RecordValue) -> Query {
        Query(filters: [Filter(field: field, value: value)])
    }

    /// This query with one more equality.
    public func and(_ field: String, equals value: RecordValue) -> Query {
        var copy = self
        copy.filters.append(Filter(field: field, value: value))
        return copy
    }

    /// This query with one more sort key.
    public func sorted(by field: String, ascending: Bool = true) -> Query {
        var copy = self
        copy.order.append(Order(field: field, ascending: ascending))
        return copy
    }

    /// This query limited to `limit` results after skipping `offset`.
    public func limited(to limit: Int, offset: Int = 0) -> Query {
        var copy = self
        copy.limit = limit
        copy.offset = offset
        return copy
    }

    /// Whether `model` passes every filter (a missing field never equals anything but `.null`).
    ///
    /// - Parameter model: The candidate.
    /// - Returns: True when every equality holds.
    public func matches(_ model: some Queryable) -> Bool {
        filters.allSatisfy { (model.fieldValue($0.field) ?? .null) == $0.value }
    }

    /// Filters, sorts (stably), skips and limits `models`, the reference semantics for repositories.
    ///
    /// - Parameter models: The candidates, in insertion order.
    /// - Returns: The matching models in query order.
    /// - Throws: `RepositoryError.invalidQuery` for a negative limit or offset.
    public func apply<Model: Queryable>(to models: [Model]) throws -> [Model] {
        try validate()
        var result = models.filter(matches)
        if !order.isEmpty {
            let keyed = result.enumerated().map { index, model in
                (index, order.map { model.fieldValue($0.field) ?? .null }, model)
            }
            result = keyed.sorted { lhs, rhs in
                for (position, key) in order.enumerated() where lhs.1[position] != rhs.1[position] {
                    return key.ascending ? lhs.1[position] < rhs.1[position] : rhs.1[position] < lhs.1[position]
                }
                return lhs.0 < rhs.0
            }.map(\.2)
        }
        let skipped = result.dropFirst(offset)
        return Array(limit.map { skipped.prefix($0) } ?? skipped)
    }

    /// Checks that the query can run: its limit and offset are not negative.
    ///
    /// - Throws: `RepositoryError.invalidQuery` naming the bad part.
    public func validate() throws {
        if let limit, limit < 0 { throw RepositoryError.invalidQuery("limit \(limit) is negative") }
        if offset < 0 { throw RepositoryError.invalidQuery("offset \(offset) is negative") }
    }

    public var description: String {
        var parts = filters.map { "\($0.field) == \($0.value)" }
        parts += order.map { "order \($0.field) \($0.ascending ? "asc" : "desc")" }
        if let limit { parts.append("limit \(limit)") }
        if offset > 0 { parts.append("offset \(offset)") }
        return parts.isEmpty ? "all" : parts.joined(separator: ", ")
    }
}
