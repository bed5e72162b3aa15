import Runtime
import XCTest

final class RepositoryTests: XCTestCase {
    private func people() -> InMemoryRepository<Record> {
        InMemoryRepository([
            Record(id: "1", fields: ["name": "Ada", "team": "core", "age": 36]),
            Record(id: "2", fields: ["name": "Grace", "team": "tools", "age": 45]),
            Record(id: "3", fields: ["name": "Linus", "team": "core", "age": 28]),
            Record(id: "4", fields: ["name": "Barbara", "team": "core", "age": 45.5]),
        ])
    }

    func testGetByIdAndByQuery() throws {
        let repository = people()
        XCTAssertEqual(try repository.get(id: "2")?["name"], "Grace")
        XCTAssertNil(try repository.get(id: "9"))
        XCTAssertEqual(try repository.get(.where("team", equals: "core"))?.id, "1")
        XCTAssertEqual(try repository.get(.where("id", equals: "3"))?["name"], "Linus")
        XCTAssertNil(try repository.get(.where("team", equals: "none")))
    }

    func testQueryFiltersOrdersAndLimits() throws {
        let repository = people()
        let query = Query.where("team", equals: "core").sorted(by: "age", ascending: false).limited(to: 2)
        XCTAssertEqual(try repository.getAll(query).map(\.id), ["4", "1"])
        XCTAssertEqual(try repository.getAll(Query.all.sorted(by: "age")).map(\.id), ["3", "1", "2", "4"])
        XCTAssertEqual(try repository.getAll(Query.all.limited(to: 2, offset: 1)).map(\.id), ["2", "3"])
        XCTAssertEqual(try repository.getAll(.where("team", equals: "core").and("age", equals: 28)).map(\.id), ["3"])
        XCTAssertEqual(try repository.getAll(ids: ["3", "9", "1"]).map(\.id), ["3", "1"])
        XCTAssertThrowsError(try repository.getAll(Query.all.limited(to: -1))) { error in
            XCTAssertEqual(error as? RepositoryError, .invalidQuery("limit -1 is negative"))
        }
    }

    func testPutReplacesByIdAndKeepsInsertionOrder() throws {
        let repository = people()
        try repository.put(Record(id: "2", fields: ["name": "Grace Hopper", "team": "tools"]))
        try repository.putAll([
            Record(id: "5", fields: ["name": "Edsger"]), Record(id: "1", fields: ["name": "Ada L."]),
        ])
        XCTAssertEqual(try repository.getAll(.all).map(\.id), ["1", "2", "3", "4", "5"])
        XCTAssertEqual(try repository.get(id: "2")?["name"], "Grace Hopper")
        XCTAssertEqual(try repository.get(id: "1")?["name"], "Ada L.")
    }

    func testPutAllReplacingAQueryCachesItsResults() throws {
        let repository = people()
        let core = Query.where("team", equals: "core")
        try repository.putAll([Record(id: "7", fields: ["team": "core"])], replacing: core)
        XCTAssertEqual(try repository.getAll(core).map(\.id), ["7"])
        XCTAssertEqual(try repository.getAll(.all).map(\.id), ["2", "7"])
    }

    func testDeleteByIdAndByQuery() throws {
        let repository = people()
        XCTAssertTrue(try repository.delete(id: "2"))
        XCTAssertFalse(try repository.delete(id: "2"))
        XCTAssertTrue(try repository.delete(.where("team", equals: "core")))
        XCTAssertEqual(try repository.getAll(.all).map(\.id), ["3", "4"])
        XCTAssertEqual(try repository.deleteAll(ids: ["3", "9"]), 1)
        XCTAssertEqual(try repository.deleteAll(.all), 1)
        XCTAssertEqual(try repository.getAll(.all), [])
    }

    func testCodableModelsAreQueryableByTheirFields() throws {
        struct Post: Codable, Identifiable, Queryable, Sendable, Equatable {
            var id: Int
            var user: Int
            var title: String
        }
        let posts = InMemoryRepository([
            Post(id: 1, user: 7, title: "b"), Post(id: 2, user: 8, title: "a"), Post(id: 3, user: 7, title: "a"),
        ])
        XCTAssertEqual(try posts.getAll(Query.where("user", equals: 7).sorted(by: "title")).map(\.id), [3, 1])
        XCTAssertEqual(try posts.get(id: 2)?.title, "a")
    }

    func testRecordValueOrdersAcrossKindsAndRoundTripsThroughJSON() throws {
        XCTAssertLessThan(RecordValue.null, .bool(false))
        XCTAssertLessThan(RecordValue.int(2), .double(2.5))
        XCTAssertLessThan(RecordValue.double(2.5), .int(3))
        XCTAssertLessThan(RecordValue.int(99), .string("0"))
        let value: RecordValue = ["a": [1, 2.5, "x", true, nil]]
        let data = try JSONEncoder().encode(value)
        XCTAssertEqual(try JSONDecoder().decode(RecordValue.self, from: data), value)
    }

    func testCRUDUseCasesRunOnTheirExecutor() async throws {
        let repository = InMemoryRepository<Record>()
        let db = SerialQueueExecutor(label: "test.db")
        let put = CRUD.put(repository, executor: db)
        let putAll = CRUD.putAll(repository, executor: db)
        let get = CRUD.get(repository, executor: db)
        let getAll = CRUD.getAll(repository, executor: db)
        let delete = CRUD.delete(repository, executor: db)
        let deleteAll = CRUD.deleteAll(repository, executor: db)

        try await put.execute(.byID(Record(id: "a", fields: ["kind": "x"])))
        try await putAll.execute(
            .byID([Record(id: "b", fields: ["kind": "y"]), Record(id: "c", fields: ["kind": "x"])]))
        let byID = try await get.execute(.id("b"))
        let byQuery = try await get.execute(.query(.where("kind", equals: "x")))
        let allX = try await getAll.execute(.query(.where("kind", equals: "x")))
        let some = try await getAll.execute(.ids(["c", "a"]))
        XCTAssertEqual(byID?.id, "b")
        XCTAssertEqual(byQuery?.id, "a")
        XCTAssertEqual(allX.map(\.id), ["a", "c"])
        XCTAssertEqual(some.map(\.id), ["c", "a"])

        try await put.execute(.replacing(.where("kind", equals: "y"), with: Record(id: "z", fields: ["kind": "y"])))
        try await putAll.execute(.replacing(.where("id", equals: "a"), with: [Record(id: "w")]))
        let afterPut = try await getAll.execute(.query(.all))
        XCTAssertEqual(afterPut.map(\.id), ["c", "z", "w"])

        let deleted = try await delete.execute(.id("c"))
        let deletedByQuery = try await delete.execute(.query(.where("kind", equals: "y")))
        XCTAssertTrue(deleted)
        XCTAssertTrue(deletedByQuery)
        try await put.execute(.byID(Record(id: "v")))
        let countByIDs = try await deleteAll.execute(.ids(["v", "nope"]))
        let countByQuery = try await deleteAll.execute(.query(.all))
        XCTAssertEqual(countByIDs, 1)
        XCTAssertEqual(countByQuery, 1)
    }

    func testComposedUseCasesShareOneSerialExecutor() async throws {
        // Harmony's CountAllUsers / UserLimitReached: default interactors composed inside a use case.
        let db = SerialQueueExecutor(label: "test.compose")
        let users = InMemoryRepository((1...5).map { Record(id: "\($0)") })
        let getUsers = CRUD.getAll(users, executor: db)
        let countAll = UseCase<Void, Int>(executor: db) { _ in try getUsers.execute(.query(.all)).count }
        let limitReached = UseCase<Int, Bool>(executor: db) { limit in try countAll.execute(()) > limit }
        let reached = try await withTimeout(seconds: 5) { try await limitReached.execute(4) }
        let notReached = try await withTimeout(seconds: 5) { try await limitReached.execute(5) }
        XCTAssertTrue(reached)
        XCTAssertFalse(notReached)
    }
}
