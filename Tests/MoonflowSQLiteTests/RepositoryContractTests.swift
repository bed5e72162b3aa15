import Foundation
import MoonflowSQLite
import Runtime
import XCTest

/// One suite, every repository kind: the in-memory reference, SQLite in a file in a temporary
/// folder, and SQLite in memory get the same calls and must give the same results.
final class RepositoryContractTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-contract-\(UUID().uuidString)")
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: folder) }

    private static let people: [Record] = [
        Record(id: "1", fields: ["name": "Ada", "team": "core", "age": 36]),
        Record(id: "2", fields: ["name": "Grace", "team": "tools", "age": 45]),
        Record(id: "3", fields: ["name": "Linus", "team": "core", "age": 28]),
        Record(id: "4", fields: ["name": "Barbara", "team": "core", "age": 45.5]),
    ]

    /// Each kind, filled with `records` (in this order).
    private func kinds(
        _ records: [Record] = people, indexes: [String] = ["team", "age"]
    ) throws -> [(String, any Repository<Record>)] {
        let file = try SQLiteRepository<Record>(
            path: folder.appendingPathComponent("\(UUID().uuidString).db").path, table: "people", indexes: indexes)
        let memory = try SQLiteRepository<Record>(path: ":memory:", table: "people", indexes: indexes)
        let kinds: [(String, any Repository<Record>)] = [
            ("in-memory", InMemoryRepository<Record>()), ("sqlite file", file), ("sqlite :memory:", memory),
        ]
        for (_, repository) in kinds { try repository.putAll(records) }
        return kinds
    }

    private func ids(_ records: [Record]) -> [String] { records.map(\.id) }

    func testGetByIdAndByQuery() throws {
        for (kind, repository) in try kinds() {
            XCTAssertEqual(try repository.get(id: "2")?["name"], "Grace", kind)
            XCTAssertNil(try repository.get(id: "9"), kind)
            XCTAssertEqual(try repository.get(.where("team", equals: "core"))?.id, "1", kind)
            XCTAssertEqual(try repository.get(.where("id", equals: "3"))?["name"], "Linus", kind)
            XCTAssertNil(try repository.get(.where("team", equals: "none")), kind)
            XCTAssertEqual(try repository.get(id: "4"), Self.people[3], "\(kind): every field comes back as it was put")
        }
    }

    func testFiltersOrdersLimitsAndOffsets() throws {
        for (kind, repository) in try kinds() {
            let query = Query.where("team", equals: "core").sorted(by: "age", ascending: false).limited(to: 2)
            XCTAssertEqual(ids(try repository.getAll(query)), ["4", "1"], kind)
            XCTAssertEqual(
                ids(try repository.getAll(Query.all.sorted(by: "age"))), ["3", "1", "2", "4"],
                "\(kind): integers and floats order as numbers")
            XCTAssertEqual(ids(try repository.getAll(Query.all.limited(to: 2, offset: 1))), ["2", "3"], kind)
            XCTAssertEqual(ids(try repository.getAll(Query(offset: 3))), ["4"], "\(kind): an offset without a limit")
            XCTAssertEqual(
                ids(try repository.getAll(.where("team", equals: "core").and("age", equals: 28))), ["3"], kind)
            XCTAssertEqual(
                ids(try repository.getAll(ids: ["3", "9", "1", "3"])), ["3", "1", "3"],
                "\(kind): ids in the order asked, missing ones skipped")
            XCTAssertEqual(
                ids(try repository.getAll(Query.all.sorted(by: "team").sorted(by: "name", ascending: false))),
                ["3", "4", "1", "2"], "\(kind): a second key breaks ties")
            XCTAssertEqual(
                ids(try repository.getAll(Query.all.sorted(by: "id", ascending: false))), ["4", "3", "2", "1"], kind)
            XCTAssertThrowsError(try repository.getAll(Query.all.limited(to: -1)), kind) { error in
                XCTAssertEqual(error as? RepositoryError, .invalidQuery("limit -1 is negative"), kind)
            }
            XCTAssertThrowsError(try repository.deleteAll(Query(offset: -2)), kind) { error in
                XCTAssertEqual(error as? RepositoryError, .invalidQuery("offset -2 is negative"), kind)
            }
            XCTAssertEqual(try repository.getAll(.all).count, 4, "\(kind): a refused query deleted nothing")
        }
    }

    func testEqualityIsExactAboutKinds() throws {
        let records = [
            Record(id: "i", fields: ["v": 1]),
            Record(id: "d", fields: ["v": 1.0]),
            Record(id: "b", fields: ["v": true]),
            Record(id: "s", fields: ["v": "1"]),
            Record(id: "n", fields: ["v": nil]),
            Record(id: "m", fields: [:]),
            Record(id: "a", fields: ["v": [1, "x"]]),
            Record(id: "o", fields: ["v": ["k": 1]]),
        ]
        for (kind, repository) in try kinds(records, indexes: ["v"]) {
            XCTAssertEqual(ids(try repository.getAll(.where("v", equals: 1))), ["i"], kind)
            XCTAssertEqual(ids(try repository.getAll(.where("v", equals: 1.0))), ["d"], kind)
            XCTAssertEqual(ids(try repository.getAll(.where("v", equals: true))), ["b"], kind)
            XCTAssertEqual(ids(try repository.getAll(.where("v", equals: false))), [], kind)
            XCTAssertEqual(ids(try repository.getAll(.where("v", equals: "1"))), ["s"], kind)
            XCTAssertEqual(
                ids(try repository.getAll(.where("v", equals: nil))), ["n", "m"],
                "\(kind): null matches a null and a missing field")
            XCTAssertEqual(
                ids(try repository.getAll(.where("v", equals: [1, "x"]))), ["a"], "\(kind): a list compares whole")
            XCTAssertEqual(ids(try repository.getAll(.where("v", equals: ["k": 1]))), ["o"], kind)
            XCTAssertEqual(ids(try repository.getAll(.where("v", equals: ["k": 1]).and("id", equals: "x"))), [], kind)
            XCTAssertEqual(
                ids(try repository.getAll(.where("id", equals: 1))), [], "\(kind): a Record's id is a string")
            XCTAssertEqual(ids(try repository.getAll(.where("v", equals: .double(.infinity)))), [], kind)
        }
    }

    func testOrderAcrossKindsMatchesTheReference() throws {
        let records = [
            Record(id: "o2", fields: ["v": ["a": 1, "b": 2]]),
            Record(id: "s", fields: ["v": "b"]),
            Record(id: "a2", fields: ["v": [1, 3]]),
            Record(id: "n", fields: ["v": nil]),
            Record(id: "t", fields: ["v": true]),
            Record(id: "x", fields: ["v": 2.5]),
            Record(id: "m", fields: [:]),
            Record(id: "a1", fields: ["v": [1, 2, 9]]),
            Record(id: "f", fields: ["v": false]),
            Record(id: "i", fields: ["v": 2]),
            Record(id: "o1", fields: ["v": ["a": 1]]),
            Record(id: "s0", fields: ["v": "a"]),
            Record(id: "big", fields: ["v": .int(1 << 53 + 1)]),
        ]
        let expected = ["n", "m", "f", "t", "i", "x", "big", "s0", "s", "a1", "a2", "o1", "o2"]
        for (kind, repository) in try kinds(records, indexes: ["v"]) {
            XCTAssertEqual(ids(try repository.getAll(Query.all.sorted(by: "v"))), expected, kind)
            // Descending reverses the order but keeps ties (null and missing) in insertion order.
            XCTAssertEqual(
                ids(try repository.getAll(Query.all.sorted(by: "v", ascending: false))),
                ["o2", "o1", "a2", "a1", "s", "s0", "big", "x", "i", "t", "f", "n", "m"], kind)
        }
    }

    func testPutReplacesByIdAndKeepsInsertionOrder() throws {
        for (kind, repository) in try kinds() {
            try repository.put(Record(id: "2", fields: ["name": "Grace Hopper", "team": "tools"]))
            try repository.putAll([
                Record(id: "5", fields: ["name": "Edsger"]), Record(id: "1", fields: ["name": "Ada L."]),
            ])
            XCTAssertEqual(ids(try repository.getAll(.all)), ["1", "2", "3", "4", "5"], kind)
            XCTAssertEqual(
                try repository.get(id: "2"), Record(id: "2", fields: ["name": "Grace Hopper", "team": "tools"]),
                "\(kind): a put replaces every field")
            XCTAssertEqual(try repository.get(id: "1")?["name"], "Ada L.", kind)
        }
    }

    func testPutAllReplacingAQuery() throws {
        for (kind, repository) in try kinds() {
            let core = Query.where("team", equals: "core")
            try repository.putAll(
                [
                    Record(id: "7", fields: ["team": "core"]),
                    Record(id: "3", fields: ["team": "core", "name": "Linus"]),
                ], replacing: core)
            XCTAssertEqual(ids(try repository.getAll(core)), ["7", "3"], kind)
            XCTAssertEqual(ids(try repository.getAll(.all)), ["2", "7", "3"], kind)
            try repository.put(Record(id: "8", fields: ["team": "tools"]), replacing: .where("team", equals: "tools"))
            XCTAssertEqual(ids(try repository.getAll(.all)), ["7", "3", "8"], kind)
        }
    }

    func testDeleteByIdAndByQuery() throws {
        for (kind, repository) in try kinds() {
            XCTAssertTrue(try repository.delete(id: "2"), kind)
            XCTAssertFalse(try repository.delete(id: "2"), kind)
            XCTAssertTrue(try repository.delete(.where("team", equals: "core")), kind)
            XCTAssertEqual(ids(try repository.getAll(.all)), ["3", "4"], kind)
            XCTAssertFalse(try repository.delete(Query.all.limited(to: 0)), "\(kind): limit 0 deletes nothing")
            XCTAssertEqual(try repository.deleteAll(ids: ["3", "9", "3"]), 1, kind)
            XCTAssertEqual(try repository.deleteAll(.all), 1, kind)
            XCTAssertEqual(try repository.getAll(.all), [], kind)
        }
    }

    func testDeleteAllHonoursOrderAndLimit() throws {
        for (kind, repository) in try kinds() {
            XCTAssertEqual(
                try repository.deleteAll(Query.all.sorted(by: "age", ascending: false).limited(to: 2)), 2, kind)
            XCTAssertEqual(ids(try repository.getAll(.all)), ["1", "3"], "\(kind): the two oldest went")
            XCTAssertEqual(try repository.deleteAll(.where("tags", equals: ["x"])), 0, kind)
        }
    }

    func testCodableModelsBehaveTheSame() throws {
        struct Post: Codable, Identifiable, Queryable, Sendable, Equatable {
            var id: Int
            var user: Int
            var title: String
            var score: Double
        }
        let posts = [
            Post(id: 1, user: 7, title: "b", score: 1.5), Post(id: 2, user: 8, title: "a", score: 2),
            Post(id: 3, user: 7, title: "a", score: 0.25), Post(id: 1 << 53 + 1, user: 9, title: "big", score: -1),
        ]
        let kinds: [(String, any Repository<Post>)] = [
            ("in-memory", InMemoryRepository<Post>()),
            (
                "sqlite file",
                try SQLiteRepository<Post>(
                    path: folder.appendingPathComponent("posts.db").path, table: "posts", indexes: ["user"])
            ),
        ]
        for (kind, repository) in kinds {
            try repository.putAll(posts)
            XCTAssertEqual(
                try repository.getAll(Query.where("user", equals: 7).sorted(by: "title")).map(\.id), [3, 1], kind)
            XCTAssertEqual(try repository.get(id: 2), posts[1], kind)
            XCTAssertEqual(try repository.get(id: 1 << 53 + 1), posts[3], "\(kind): 2^53 + 1 is kept exactly")
            XCTAssertEqual(
                try repository.getAll(Query.all.sorted(by: "score")).map(\.id), [1 << 53 + 1, 3, 1, 2], kind)
            XCTAssertEqual(try repository.deleteAll(.where("user", equals: 7)), 2, kind)
            XCTAssertEqual(try repository.getAll(.all), [posts[1], posts[3]], kind)
        }
    }

    func testCRUDUseCasesRunOnEveryKind() async throws {
        for (kind, repository) in try kinds([]) {
            let db = SerialQueueExecutor(label: "test.contract")
            let put = CRUD.put(repository, executor: db)
            let putAll = CRUD.putAll(repository, executor: db)
            let getAll = CRUD.getAll(repository, executor: db)
            let deleteAll = CRUD.deleteAll(repository, executor: db)
            try await put.execute(.byID(Record(id: "a", fields: ["kind": "x"])))
            try await putAll.execute(
                .byID([Record(id: "b", fields: ["kind": "y"]), Record(id: "c", fields: ["kind": "x"])]))
            let xs = try await getAll.execute(.query(.where("kind", equals: "x")))
            XCTAssertEqual(ids(xs), ["a", "c"], kind)
            let gone = try await deleteAll.execute(.query(.where("kind", equals: "x")))
            XCTAssertEqual(gone, 2, kind)
            let left = try await getAll.execute(.query(.all))
            XCTAssertEqual(ids(left), ["b"], kind)
        }
    }

    /// A long deterministic run of random calls: after every call, SQLite answers exactly as the
    /// in-memory reference does.
    func testRandomCallsGiveTheSameResultsAsTheReference() throws {
        let reference = InMemoryRepository<Record>()
        let sqlite = try SQLiteRepository<Record>(
            path: folder.appendingPathComponent("random.db").path, table: "random", indexes: ["team"])
        var random = SplitMix(seed: 13)
        let teams: [RecordValue] = ["core", "tools", nil, 1, 1.0, true, ["a"]]
        func record() -> Record {
            var fields: [String: RecordValue] = ["n": .int(random.below(5))]
            if random.below(4) > 0 { fields["team"] = teams[random.below(teams.count)] }
            if random.below(3) == 0 { fields["score"] = .double(Double(random.below(7)) / 2) }
            return Record(id: "r\(random.below(30))", fields: fields)
        }
        func query() -> Query {
            var q = Query()
            if random.below(2) == 0 { q = q.and("team", equals: teams[random.below(teams.count)]) }
            if random.below(3) == 0 { q = q.and("n", equals: .int(random.below(5))) }
            for _ in 0..<random.below(3) {
                q = q.sorted(by: ["team", "n", "score", "id"][random.below(4)], ascending: random.below(2) == 0)
            }
            if random.below(3) == 0 { q = q.limited(to: random.below(6), offset: random.below(4)) }
            return q
        }
        for step in 0..<400 {
            let what: String
            switch random.below(8) {
            case 0: let r = record(); what = "put \(r)"; try reference.put(r); try sqlite.put(r)
            case 1:
                let rs = (0..<random.below(6)).map { _ in record() }; what = "putAll"; try reference.putAll(rs);
                try sqlite.putAll(rs)
            case 2:
                let rs = [record(), record()], q = query(); what = "putAll replacing \(q)"
                try reference.putAll(rs, replacing: q); try sqlite.putAll(rs, replacing: q)
            case 3:
                let id = "r\(random.below(30))"; what = "delete \(id)"
                XCTAssertEqual(try reference.delete(id: id), try sqlite.delete(id: id), "step \(step): \(what)")
            case 4:
                let q = query(); what = "delete \(q)"
                XCTAssertEqual(try reference.delete(q), try sqlite.delete(q), "step \(step): \(what)")
            case 5:
                let q = query(); what = "deleteAll \(q)"
                XCTAssertEqual(try reference.deleteAll(q), try sqlite.deleteAll(q), "step \(step): \(what)")
            default:
                let q = query(); what = "getAll \(q)"
                XCTAssertEqual(try reference.getAll(q), try sqlite.getAll(q), "step \(step): \(what)")
            }
            XCTAssertEqual(
                try reference.getAll(.all), try sqlite.getAll(.all), "step \(step): contents differ after \(what)")
        }
    }
}

/// A small deterministic random number generator (SplitMix64), so a failing run repeats.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}
