import Foundation
import GRDB
import MoonflowSQLite
import Runtime
import XCTest

private typealias Record = Runtime.Record

/// Faults of the file under a repository: each is a `storage failed: FILE: ...` error saying
/// what to do, keeps nothing of the failed call, and leaves the repository usable afterwards.
final class SQLiteFaultTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-faults-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: folder) }

    private func path(_ name: String = "test.db") -> String { folder.appendingPathComponent(name).path }

    private func assertStorageError(
        _ call: @autoclosure () throws -> some Any, contains parts: [String],
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try call(), file: file, line: line) { error in
            guard case .storage(let why)? = error as? RepositoryError else {
                return XCTFail("not a storage error: \(error)", file: file, line: line)
            }
            for part in parts {
                XCTAssertTrue("\(error)".contains(part), "\(error) does not say \(part)", file: file, line: line)
            }
            XCTAssertTrue(why.hasPrefix(self.path()), "\(why) does not start with the file", file: file, line: line)
        }
    }

    func testALockedDatabaseFailsWritesButNotReads() throws {
        let users = try SQLiteRepository<Record>(path: path(), table: "users", options: .init(busyTimeout: 0.2))
        try users.put(Record(id: "1", fields: ["name": "Ada"]))

        // Another connection (another program, say) takes the write lock and keeps it.
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let other = try DatabaseQueue(path: path(), configuration: configuration)
        try other.writeWithoutTransaction { db in
            try db.execute(sql: "BEGIN IMMEDIATE")
            try db.execute(sql: "INSERT INTO users (id, seq, fields) VALUES ('9', 9, '{}')")
        }

        assertStorageError(
            try users.put(Record(id: "2")),
            contains: [
                "storage failed: ", "locked by another connection", "close the program holding it, or try again",
            ])
        XCTAssertEqual(
            try users.getAll(.all).map(\.id), ["1"],
            "reads run beside the other write (WAL) and do not see it uncommitted")

        try other.writeWithoutTransaction { db in try db.execute(sql: "ROLLBACK") }
        try users.put(Record(id: "2"))
        XCTAssertEqual(try users.getAll(.all).map(\.id), ["1", "2"], "the write goes through once the lock is gone")
    }

    func testAReadOnlyDatabaseRefusesWrites() throws {
        try SQLiteRepository<Record>(path: path(), table: "users").put(Record(id: "1", fields: ["name": "Ada"]))
        let readOnly = try SQLiteRepository<Record>(path: path(), table: "users", options: .init(readOnly: true))
        XCTAssertEqual(try readOnly.get(id: "1")?["name"], "Ada")
        assertStorageError(
            try readOnly.put(Record(id: "2")),
            contains: ["the database is read-only", "make the file and its folder writable"])
        assertStorageError(try readOnly.deleteAll(.all), contains: ["read-only"])
        XCTAssertEqual(try readOnly.getAll(.all).map(\.id), ["1"])
    }

    func testAFullDatabaseKeepsNothingOfTheBatchAndTakesSmallerWrites() throws {
        let users = try SQLiteRepository<Record>(
            path: path(), table: "users", indexes: ["team"], options: .init(maximumSize: 96 * 1024))
        try users.put(Record(id: "first", fields: ["team": "core"]))
        let text = String(repeating: "x", count: 1000)
        let batch = (0..<500).map { Record(id: "\($0)", fields: ["team": "core", "text": .string(text)]) }
        assertStorageError(
            try users.putAll(batch),
            contains: ["the disk or the database's size limit is full", "free some space or raise the limit"])
        XCTAssertEqual(try users.getAll(.all).map(\.id), ["first"], "no row of the failed batch was kept")
        assertStorageError(try users.putAll(batch, replacing: .all), contains: ["full"])
        XCTAssertEqual(try users.getAll(.all).map(\.id), ["first"], "nor was the replaced row deleted")
        try users.putAll(Array(batch.prefix(5)))
        XCTAssertEqual(try users.getAll(.all).count, 6, "a batch that fits is stored")
    }

    func testACorruptFileFailsEveryCallUntilItIsMovedAway() throws {
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: path()))
        let users = try SQLiteRepository<Record>(path: path(), table: "users")
        let advice = [
            "the file is not a SQLite database or is damaged",
            "move it away to start empty, or restore it from a backup",
        ]
        assertStorageError(try users.get(id: "1"), contains: advice)
        assertStorageError(try users.put(Record(id: "1")), contains: advice)
        XCTAssertEqual(
            try Data(contentsOf: URL(fileURLWithPath: path())), Data(repeating: 0x5A, count: 8192),
            "the damaged file was not overwritten")

        try FileManager.default.removeItem(atPath: path())
        try users.put(Record(id: "1"))
        XCTAssertEqual(try users.getAll(.all).map(\.id), ["1"], "the same repository works once the file is gone")
    }

    func testARowThatIsNotJSONNamesTheRow() throws {
        let users = try SQLiteRepository<Record>(path: path(), table: "users")
        try users.put(Record(id: "ok"))
        let other = try DatabaseQueue(path: path())
        try other.write { db in
            try db.execute(sql: "INSERT INTO users (id, seq, fields) VALUES ('bad', 99, '{\"a\": ')")
        }
        assertStorageError(
            try users.getAll(.all),
            contains: ["the row \"bad\" of users holds fields that are not valid JSON", "fix or delete that row"])
        XCTAssertEqual(try users.get(id: "ok")?.id, "ok", "other rows still read")
    }

    func testAFolderThatCannotBeMadeIsNamed() throws {
        let blocker = folder.appendingPathComponent("file")
        try Data("x".utf8).write(to: blocker)
        let target = blocker.appendingPathComponent("sub/users.db").path
        let users = try SQLiteRepository<Record>(path: target, table: "users")
        XCTAssertThrowsError(try users.put(Record(id: "1"))) { error in
            XCTAssertTrue(
                "\(error)".hasPrefix("storage failed: \(target): cannot make its folder \(blocker.path)/sub"),
                "\(error)")
        }
    }
}
