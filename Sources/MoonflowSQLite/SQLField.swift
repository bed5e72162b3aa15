import Foundation
import GRDB
import Runtime

/// How one record field reads in SQL, so that `Query` filters and orders run in the database with
/// `RecordValue`'s semantics: a missing field equals only null; `1`, `1.0`, `true` and `"1"` are
/// four different values; values order null < bool < number < string < array < object.
///
/// A field other than `id` lives in the row's `fields` JSON and reads as three expressions:
/// - `rank`, the kind's place in that order (0 null or missing, 1 bool, 2 number, 3 string,
///   4 array, 5 object);
/// - `scalar`, the value of a null, bool (0 or 1), number or string, NULL for arrays and objects;
/// - `complex`, the JSON text of an array or object, ordered by the `moonflow_value` collation.
///
/// An index on a declared field is an expression index on `(rank, scalar, seq)`, which serves both
/// an equality filter (`rank = 3 AND scalar = 'core'`, in insertion order) and the leading keys of
/// an ordering.
struct SQLField {
    let name: String
    let rank: String
    let scalar: String
    let complex: String?
    /// The JSON type test for one kind (`json_type(...) = 'integer'`), nil for `id`.
    private let type: String?

    /// The field `name`, or nil when SQLite's JSON paths cannot name it: it contains `"`, or a
    /// character that JSON text escapes (`\\`, control characters), which SQLite 3.40's paths
    /// compare unescaped.
    init?(_ name: String) {
        self.name = name
        if name == "id" {
            rank = "CASE typeof(id) WHEN 'integer' THEN 2 ELSE 3 END"
            scalar = "id"
            complex = nil
            type = nil
            return
        }
        guard !name.unicodeScalars.contains(where: { $0 == "\"" || $0 == "\\" || $0.value < 0x20 }) else { return nil }
        let path = "'$.\"" + name.replacingOccurrences(of: "'", with: "''") + "\"'"
        let type = "json_type(fields, \(path))"
        let value = "json_extract(fields, \(path))"
        self.type = type
        rank =
            "(CASE \(type) WHEN 'true' THEN 1 WHEN 'false' THEN 1 WHEN 'integer' THEN 2 WHEN 'real' THEN 2 "
            + "WHEN 'text' THEN 3 WHEN 'array' THEN 4 WHEN 'object' THEN 5 ELSE 0 END)"
        scalar = "(CASE WHEN \(type) IN ('array', 'object') THEN NULL ELSE \(value) END)"
        complex = "(CASE WHEN \(type) IN ('array', 'object') THEN \(value) END)"
    }

    /// A condition true exactly when the field equals `value`, or nil when only Swift can tell
    /// (arrays and objects).
    func equals(_ value: RecordValue) -> (sql: String, arguments: [DatabaseValue])? {
        guard let type else {
            // `id`: an integer or a string, compared with its exact type.
            switch value {
            case .int(let i): return ("(typeof(id) = 'integer' AND id = ?)", [Int64(i).databaseValue])
            case .string(let s): return ("(typeof(id) = 'text' AND id = ?)", [s.databaseValue])
            case .array, .object: return nil
            default: return ("0", [])
            }
        }
        switch value {
        case .null: return ("\(rank) = 0", [])
        case .bool(let b): return ("\(rank) = 1 AND \(scalar) = ?", [(b ? 1 : 0).databaseValue])
        case .int(let i): return ("\(rank) = 2 AND \(scalar) = ? AND \(type) = 'integer'", [Int64(i).databaseValue])
        case .double(let d):
            guard d.isFinite else { return ("0", []) }  // nothing stored is infinite or NaN
            return ("\(rank) = 2 AND \(scalar) = ? AND \(type) = 'real'", [d.databaseValue])
        case .string(let s): return ("\(rank) = 3 AND \(scalar) = ?", [s.databaseValue])
        case .array, .object: return nil
        }
    }

    /// ORDER BY terms for this field.
    func orderTerms(ascending: Bool) -> [String] {
        let direction = ascending ? "ASC" : "DESC"
        var terms = ["\(rank) \(direction)", "\(scalar) \(direction)"]
        if let complex { terms.append("\(complex) COLLATE \(Self.valueCollation.name) \(direction)") }
        return terms
    }

    /// The index on a declared field: serves equality filters (their matches come out in
    /// insertion order, `seq`, so the first match is one step away) and orderings on it.
    func indexStatement(table: String) -> String {
        "CREATE INDEX \(SQLName.quoted("\(table).\(name)")) ON \(SQLName.quoted(table)) (\(rank), \(scalar), seq)"
    }

    /// Orders two JSON texts of arrays or objects as `RecordValue` does (arrays lexicographically,
    /// objects by size); text that does not parse sorts last.
    static let valueCollation = DatabaseCollation("moonflow_value") { lhs, rhs in
        let a = try? StoredJSON.value(from: lhs), b = try? StoredJSON.value(from: rhs)
        switch (a, b) {
        case let (a?, b?): return a < b ? .orderedAscending : b < a ? .orderedDescending : .orderedSame
        case (nil, nil): return lhs < rhs ? .orderedAscending : lhs > rhs ? .orderedDescending : .orderedSame
        case (nil, _): return .orderedDescending
        case (_, nil): return .orderedAscending
        }
    }
}

/// SQL identifiers.
enum SQLName {
    /// `name` as a quoted SQL identifier (`"users"`, with `"` doubled).
    static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// A `Query` as SQL over one repository table: `WHERE`, `ORDER BY`, `LIMIT` and `OFFSET`.
///
/// When part of the query can only be evaluated in Swift (a filter on an array or object value,
/// a field name SQLite's JSON paths cannot spell), `needsSwift` is set: the SQL then narrows by
/// the filters it can express, in insertion order, and the caller applies the whole query to
/// those rows with `Query.apply`, the reference semantics.
struct SQLQuery {
    private(set) var conditions: [String] = []
    private(set) var arguments: [DatabaseValue] = []
    private(set) var orderTerms: [String] = []
    private(set) var needsSwift = false
    let query: Query

    init(_ query: Query) {
        self.query = query
        for filter in query.filters {
            guard let field = SQLField(filter.field), let condition = field.equals(filter.value) else {
                needsSwift = true
                continue
            }
            conditions.append(condition.sql)
            arguments += condition.arguments
        }
        for key in query.order {
            guard let field = SQLField(key.field) else { needsSwift = true; continue }
            orderTerms += field.orderTerms(ascending: key.ascending)
        }
        orderTerms.append("seq")
    }

    /// ` WHERE ...`, or nothing.
    var whereClause: String {
        conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
    }

    /// The rows' ids and fields: everything the query asks when `needsSwift` is false, the
    /// candidates in insertion order otherwise.
    func select(from table: String, columns: String = "id, fields") -> (sql: String, arguments: StatementArguments) {
        var sql = "SELECT \(columns) FROM \(SQLName.quoted(table))\(whereClause)"
        var arguments = self.arguments
        if needsSwift {
            sql += " ORDER BY seq"
        } else {
            sql += " ORDER BY " + orderTerms.joined(separator: ", ")
            if query.limit != nil || query.offset > 0 {
                sql += " LIMIT ? OFFSET ?"
                arguments += [Int64(query.limit ?? -1).databaseValue, Int64(query.offset).databaseValue]
            }
        }
        return (sql, StatementArguments(arguments))
    }
}
