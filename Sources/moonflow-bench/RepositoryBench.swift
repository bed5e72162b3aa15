import Foundation
import MoonflowSQLite
import Runtime

// SQLite repository throughput. Puts and gets of 10,000 records, one call each and
// in one batch, on the in-memory repository and on SQLite (a WAL file in a temporary folder,
// and an in-memory SQLite database), called directly from Swift as the CRUD use cases call them.

/// Prints operations per second for each repository kind, with how many times slower (or
/// faster) each SQLite figure is than the in-memory one.
func repositoryBench() {
    let count = BenchEnvironment.scaled(10_000)
    let runs = 5
    let records = (0..<count).map { i in
        Record(
            id: "user\(i)",
            fields: ["name": .string("name \(i)"), "team": .string("t\(i % 10)"), "age": .int(20 + i % 50)])
    }
    let ids = records.map(\.id)
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("moonflow-bench-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: folder) }

    typealias Make = () throws -> any Repository<Record>
    let kinds: [(String, Make)] = [
        ("in-memory (InMemoryRepository)", { InMemoryRepository<Record>() }),
        (
            "sqlite file (WAL, synchronous=NORMAL)",
            {
                try SQLiteRepository<Record>(
                    path: folder.appendingPathComponent("\(UUID().uuidString).db").path, table: "users",
                    indexes: ["team"])
            }
        ),
        ("sqlite :memory:", { try SQLiteRepository<Record>(path: ":memory:", table: "users", indexes: ["team"]) }),
    ]

    /// The median over `runs` of `operations / seconds`, each run on a fresh repository that
    /// `prepare` fills (untimed) before `body` runs (timed).
    func perSecond(
        _ make: Make, operations: Int, prepare: (any Repository<Record>) throws -> Void = { _ in },
        _ body: (any Repository<Record>) throws -> Void
    ) throws -> Double {
        var rates: [Double] = []
        for _ in 0..<runs {
            let repository = try make()
            try repository.deleteAll(.all)  // opens the file and makes the table before timing
            try prepare(repository)
            let start = DispatchTime.now().uptimeNanoseconds
            try body(repository)
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            rates.append(Double(operations) / seconds)
        }
        return rates.sorted()[runs / 2]
    }

    let fill: (any Repository<Record>) throws -> Void = { try $0.putAll(records) }
    let teamQuery = Query.where("team", equals: "t3")
    let operations:
        [(String, Int, ((any Repository<Record>) throws -> Void)?, (any Repository<Record>) throws -> Void)] = [
            ("put, one call per record", count, nil, { r in for record in records { try r.put(record) } }),
            ("putAll, all records in one call", count, nil, { r in try r.putAll(records) }),
            (
                "get(id:), one call per record", count, fill,
                { r in for id in ids { guard try r.get(id: id) != nil else { throw BenchError("lost \(id)") } } }
            ),
            (
                "getAll(ids:), all records in one call", count, fill,
                { r in guard try r.getAll(ids: ids).count == count else { throw BenchError("lost records") } }
            ),
            (
                "getAll(where team, indexed): rows read", count, fill,
                { r in
                    for team in 0..<10 { _ = try r.getAll(.where("team", equals: .string("t\(team)"))) }
                }
            ),
            (
                "get(where team == t3), first match", 1_000, fill,
                { r in for _ in 0..<1_000 { _ = try r.get(teamQuery) } }
            ),
        ]

    print(
        "repository: \(count) records (name, team, age), operations per second, median of \(runs) runs on fresh repositories"
    )
    for (label, operationCount, prepare, body) in operations {
        print("  \(label)")
        var reference: Double?
        for (kind, make) in kinds {
            let rate: Double? = attempt(kind) {
                try perSecond(make, operations: operationCount, prepare: prepare ?? { _ in }, body)
            }
            if reference == nil { reference = rate }
            var note = ""
            if let reference, let rate {
                note =
                    reference >= rate
                    ? "\(ratio(reference, rate)) slower than in-memory"
                    : "\(ratio(rate, reference)) faster than in-memory"
            }
            print(row("  " + kind, rate, "/s", note: kind.hasPrefix("in-memory") ? "" : note))
        }
    }
}
