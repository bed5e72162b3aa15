import Foundation
import GRDB
@testable import MoonflowSQLite
import Runtime
import XCTest

private typealias Record = Runtime.Record

/// What only a SQLite repository does: values kept exactly across a reopen, seeds, schema
/// migrations, indexes that queries use, transactions.
final class SQLiteRepositoryTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-sqlite-\(UUID().uuidString)")
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: folder) }

    private func path(_ name: String = "test.db") -> String { folder.appendingPathComponent(name).path }

    func testEveryKindOfValueComesBackExactlyAfterAReopen() throws {
        let odd: RecordValue = .string("quote \" backslash \\ newline \n tab \t nul \u{0} bell \u{7} é 中 🙂")
        let record = Record(
            id: "x'\"1",
            fields: [
                "big": .int(1 << 53 + 1), "max": .int(Int.max), "min": .int(Int.min), "zero": 0,
                "two": 2.0, "tenth": 0.1, "huge": 1e300, "tiny": .double(.leastNonzeroMagnitude), "negative": -2.5,
                "yes": true, "no": false, "nothing": nil, "text": odd, "empty": "",
                "list": [1, 2.0, "three", nil, [true]], "emptyList": [], "emptyTable": [:],
                "table": ["inner": ["deep": .int(1 << 53 + 1), "none": nil], "n": 2.0],
            ])
        try SQLiteRepository<Record>(path: path(), table: "values").put(record)
        let reopened = try SQLiteRepository<Record>(path: path(), table: "values")
        let back = try XCTUnwrap(try reopened.get(id: record.id))
        XCTAssertEqual(back, record)
        XCTAssertEqual(back["two"], .double(2.0), "a whole float stays a float")
        XCTAssertEqual(back["big"], .int(9_007_199_254_740_993), "2^53 + 1 stays exact")
        XCTAssertEqual(
            try reopened.get(.where("big", equals: .int(1 << 53 + 1)))?.id, record.id, "and is found by equality")
        XCTAssertNil(try reopened.get(.where("big", equals: .int(1 << 53))), "2^53 is a different number")
        XCTAssertEqual(try reopened.get(.where("text", equals: odd))?.id, record.id)
    }

    func testIntegerAndStringIdsAreDifferentRows() throws {
        let coding = SQLiteRowCoding<Tagged>(
            id: { $0 }, encode: { ($0.id, ["tag": .string($0.tag)]) },
            decode: { id, fields in Tagged(id: id, tag: fields["tag"]?.stringValue ?? "") })
        let repository = try SQLiteRepository<Tagged>(database: .inMemory(), table: "tagged", coding: coding)
        try repository.putAll([Tagged(id: 1, tag: "int"), Tagged(id: "1", tag: "string")])
        XCTAssertEqual(try repository.get(id: 1)?.tag, "int")
        XCTAssertEqual(try repository.get(id: "1")?.tag, "string")
        XCTAssertEqual(try repository.getAll(.where("id", equals: 1)).map(\.tag), ["int"])
        XCTAssertEqual(
            try repository.getAll(Query.all.sorted(by: "id", ascending: false)).map(\.tag), ["string", "int"],
            "strings after numbers")
        XCTAssertThrowsError(try repository.put(Tagged(id: 1.5, tag: "float"))) { error in
            XCTAssertEqual(
                "\(error)",
                "storage failed: :memory:: an id of tagged is an integer or a string, not 1.5; give the model such an id"
            )
        }
    }

    func testSeedFillsOnlyANewTableAndRowsOutliveTheRepository() throws {
        let seed = [Record(id: "1", fields: ["name": "Ada"]), Record(id: "2", fields: ["name": "Grace"])]
        do {
            let users = try SQLiteRepository<Record>(path: path(), table: "users", seed: seed)
            XCTAssertEqual(try users.getAll(.all), seed)
            XCTAssertTrue(try users.delete(id: "1"))
            try users.put(Record(id: "3", fields: ["name": "Linus"]))
        }
        let again = try SQLiteRepository<Record>(path: path(), table: "users", seed: seed)
        XCTAssertEqual(try again.getAll(.all).map(\.id), ["2", "3"], "the seed did not come back over the changes")
    }

    func testTablesShareAFileAndTheirMigrationsDoNotMeet() throws {
        let database = SQLiteDatabase(path: path())
        let users = try SQLiteRepository<Record>(database: database, table: "users", indexes: ["team"])
        let posts = try SQLiteRepository<Record>(database: database, table: "posts", indexes: ["user"])
        try users.put(Record(id: "u", fields: ["team": "core"]))
        try posts.put(Record(id: "p", fields: ["user": "u"]))
        XCTAssertEqual(try users.getAll(.all).map(\.id), ["u"])
        XCTAssertEqual(try posts.getAll(.all).map(\.id), ["p"])
        let reopened = try SQLiteRepository<Record>(path: path(), table: "users")
        XCTAssertEqual(
            try reopened.getAll(.where("team", equals: "core")).map(\.id), ["u"],
            "opening with fewer indexes keeps the table")
    }

    func testANewIndexedFieldMigratesWithoutLosingRowsAndQueriesUseIt() throws {
        let rows = (0..<200).map {
            Record(id: "\($0)", fields: ["team": .string("t\($0 % 7)"), "name": .string("n\($0)")])
        }
        try SQLiteRepository<Record>(path: path(), table: "people", indexes: ["team"]).putAll(rows)

        let widened = try SQLiteRepository<Record>(path: path(), table: "people", indexes: ["team", "name"])
        XCTAssertEqual(try widened.getAll(.all), rows)
        let indexes = try widened.database.read { db in
            try String.fetchAll(
                db,
                sql:
                    "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'people' AND name LIKE 'people.%' ORDER BY name"
            )
        }
        XCTAssertEqual(indexes, ["people.name", "people.team"])

        func plan(_ query: Query) throws -> String {
            let select = SQLQuery(query).select(from: "people")
            return try widened.database.read { db in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + select.sql, arguments: select.arguments)
                    .map { $0["detail"] as String? ?? "" }.joined(separator: " | ")
            }
        }
        let byName = try plan(.where("name", equals: "n5"))
        let byTeam = try plan(.where("team", equals: "t3"))
        let sorted = try plan(Query.all.sorted(by: "name").limited(to: 5))
        XCTAssertTrue(byName.contains("USING INDEX people.name"), byName)
        XCTAssertTrue(byTeam.contains("USING INDEX people.team"), byTeam)
        XCTAssertTrue(sorted.contains("SCAN people USING INDEX people.name"), sorted)
        let first = try plan(Query.where("team", equals: "t3").limited(to: 1))
        XCTAssertTrue(
            first.contains("USING INDEX people.team") && !first.contains("TEMP B-TREE"),
            "matches come out of the index in insertion order: \(first)")
        XCTAssertEqual(try widened.getAll(.where("name", equals: "n5")).map(\.id), ["5"])
        XCTAssertEqual(
            try widened.getAll(Query.where("team", equals: "t3").sorted(by: "name", ascending: false).limited(to: 3))
                .map(\.id), ["94", "87", "80"])
    }

    func testAFailedPutAllKeepsNothing() throws {
        let users = try SQLiteRepository<Record>(path: path(), table: "users")
        try users.put(Record(id: "0", fields: ["score": 1]))
        let batch = [
            Record(id: "1", fields: ["score": 2]), Record(id: "2", fields: ["score": .double(.infinity)]),
            Record(id: "3"),
        ]
        XCTAssertThrowsError(try users.putAll(batch)) { error in
            XCTAssertEqual(
                "\(error)",
                "storage failed: \(path()): the record \"2\" of users cannot be stored: its field score is inf, which SQLite cannot hold; store a finite number (or a string)"
            )
        }
        XCTAssertThrowsError(try users.putAll(batch, replacing: .all))
        XCTAssertEqual(try users.getAll(.all).map(\.id), ["0"], "neither batch left a row, nor deleted one")
    }

    func testBadNamesAreRefusedWithTheFix() {
        XCTAssertThrowsError(try SQLiteRepository<Record>(path: ":memory:", table: "sqlite_master")) { error in
            XCTAssertEqual(
                "\(error)",
                "'sqlite_master' cannot be a table name (SQLite and GRDB reserve empty names and the prefixes sqlite_ and grdb_); rename the repository"
            )
        }
        XCTAssertThrowsError(try SQLiteRepository<Record>(path: ":memory:", table: "t", indexes: ["a\"b"])) { error in
            XCTAssertEqual(
                "\(error)",
                "'a\"b' cannot be an indexed field of t (it is empty, or has a double quote, a backslash or a control character); index a field with a plainer name"
            )
        }
    }

    func testOddFieldNamesAreStillQueried() throws {
        let repository = try SQLiteRepository<Record>(path: ":memory:", table: "odd table \"quoted\"")
        try repository.putAll([
            Record(id: "a", fields: ["it's": 1, "say \"hi\"": "x", "a.b": 2, "back\\slash": 1, "new\nline": 1]),
            Record(id: "b", fields: ["it's": 2, "say \"hi\"": "y", "back\\slash": 2, "new\nline": 2]),
        ])
        XCTAssertEqual(try repository.getAll(.where("it's", equals: 2)).map(\.id), ["b"])
        XCTAssertEqual(try repository.getAll(Query.where("say \"hi\"", equals: "x")).map(\.id), ["a"])
        XCTAssertEqual(
            try repository.getAll(Query.all.sorted(by: "say \"hi\"", ascending: false)).map(\.id), ["b", "a"])
        XCTAssertEqual(
            try repository.getAll(.where("a.b", equals: 2)).map(\.id), ["a"], "a dot is part of the name, not a path")
        XCTAssertEqual(try repository.getAll(.where("back\\slash", equals: 2)).map(\.id), ["b"])
        XCTAssertEqual(
            try repository.getAll(Query.all.sorted(by: "new\nline", ascending: false)).map(\.id), ["b", "a"])
    }
}

/// A model whose id is a `RecordValue`, as a Lua record's is.
private struct Tagged: Identifiable, Sendable {
    var id: RecordValue
    var tag: String
}

extension RecordValue {
    fileprivate var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }
}
