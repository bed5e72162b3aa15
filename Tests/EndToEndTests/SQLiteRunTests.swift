import Foundation
import XCTest

/// Declared SQLite repositories through the built binary: what one run writes, the next reads;
/// a run killed in the middle of its batches keeps every acknowledged batch and no half of one.
final class SQLiteRunTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("mf-e2e-sqlite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: folder) }

    private func write(_ text: String, to name: String) throws -> String {
        let url = folder.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    /// The `users` mutations of a jsonl run's last `list`.
    private func lastList(_ stdout: String) throws -> [[String: Any]] {
        let lists = try stdout.split(separator: "\n").compactMap { line -> [[String: Any]]? in
            let event = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            guard let mutation = event?["mutation"] as? [String: Any], mutation["type"] as? String == "list" else {
                return nil
            }
            return mutation["users"] as? [[String: Any]]
        }
        return try XCTUnwrap(lists.last, "no list mutation in:\n\(stdout)")
    }

    func testTheUsersPluginKeepsItsChangesAcrossRuns() throws {
        let db = folder.appendingPathComponent("db").path
        let writes = try write(
            """
            {"type":"add","id":4,"name":"Barbara","team":"kernel"}
            {"type":"rename","id":1,"name":"Ada Lovelace"}
            {"type":"remove","id":2}
            """, to: "writes.jsonl")
        let first = try Moonflow.run([
            "run", "plugins/users", "--actions", writes, "--format", "jsonl", "--clock", "virtual", "--db", db,
        ])
        XCTAssertEqual(first.status, 0, first.stderr + first.stdout)

        let reads = try write(#"{"type":"load"}"#, to: "reads.jsonl")
        let second = try Moonflow.run([
            "run", "plugins/users", "--actions", reads, "--format", "jsonl", "--clock", "virtual", "--db", db,
        ])
        XCTAssertEqual(second.status, 0, second.stderr + second.stdout)
        let names = try lastList(second.stdout).compactMap { $0["name"] as? String }
        XCTAssertEqual(
            names, ["Ada Lovelace", "Barbara", "Linus"], "the second run sees the first run's add, rename and remove")

        let fresh = try Moonflow.run([
            "run", "plugins/users", "--actions", reads, "--format", "jsonl", "--clock", "virtual", "--db", ":memory:",
        ])
        XCTAssertEqual(
            try lastList(fresh.stdout).compactMap { $0["name"] as? String }, ["Ada", "Grace", "Linus"],
            "--db :memory: starts from the seed")
    }

    func testADbThatIsAFileIsAUsageError() throws {
        let file = try write("not a folder", to: "file")
        let result = try Moonflow.run(["run", "plugins/users", "--actions", file, "--db", file])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(
            result.stderr.contains(
                "--db \(file) is not a folder; give a folder for the SQLite files (it is made when missing), or :memory:"
            ), result.stderr)
    }

    func testAKilledRunKeepsEveryAcknowledgedBatchAndNoHalfBatch() throws {
        _ = try write(
            """
            local mf = require "moonflow"
            local SIZE = 2000
            return mf.feature {
              name = "batches",
              initial = { stored = 0 },
              actions = { fill = { batch = "integer" }, count = {} },
              mutations = { stored = { batch = "integer" }, counted = { rows = "integer", batches = "integer", partial = "integer" } },
              strategy = { fill = "concat" },
              repositories = { rows = { sqlite = "rows.db", indexes = { "batch" } } },
              handle = function(action, _, env)
                local rows = env.services.rows
                if action.type == "fill" then
                  local list = {}
                  for i = 1, SIZE do list[i] = { id = action.batch * 10000 + i, batch = action.batch, pad = string.rep("x", 300) } end
                  return rows:putAll(list):map(function() return { type = "stored", batch = action.batch } end)
                end
                return rows:getAll():map(function(all)
                  local per, batches, partial = {}, 0, 0
                  for _, row in ipairs(all) do per[row.batch] = (per[row.batch] or 0) + 1 end
                  for _, n in pairs(per) do
                    batches = batches + 1
                    if n ~= SIZE then partial = partial + 1 end
                  end
                  return { type = "counted", rows = #all, batches = batches, partial = partial }
                end)
              end,
              reduce = function(state, m)
                if m.type == "stored" then state.stored = state.stored + 1 else state.counted = m end
                return state
              end,
            }
            """, to: "plugins/batches/init.lua")
        let plugin = folder.appendingPathComponent("plugins/batches").path
        let db = folder.appendingPathComponent("db").path
        let fills = try write(
            (1...100).map { #"{"type":"fill","batch":\#($0)}"# }.joined(separator: "\n"), to: "fills.jsonl")

        // Run the fills, and kill the process (SIGKILL: no cleanup) once a few batches are acknowledged.
        let process = Process()
        process.executableURL = try Moonflow.binary()
        process.arguments = ["run", plugin, "--actions", fills, "--format", "jsonl", "--db", db]
        let out = folder.appendingPathComponent("stdout")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        func acknowledged() -> Set<Int> {
            let text = (try? String(contentsOf: out, encoding: .utf8)) ?? ""
            return Set(
                text.split(separator: "\n").compactMap { line in
                    guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                        let mutation = event["mutation"] as? [String: Any], mutation["type"] as? String == "stored"
                    else { return nil }
                    return mutation["batch"] as? Int
                })
        }
        let deadline = Date().addingTimeInterval(60)
        while acknowledged().count < 3, process.isRunning, Date() < deadline { usleep(2_000) }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let acked = acknowledged()
        XCTAssertGreaterThanOrEqual(acked.count, 3, "the run acknowledged batches before it was killed")
        XCTAssertLessThan(acked.count, 100, "the run was killed before it finished")

        let count = try write(#"{"type":"count"}"#, to: "count.jsonl")
        let after = try Moonflow.run([
            "run", plugin, "--actions", count, "--format", "jsonl", "--clock", "virtual", "--db", db,
        ])
        XCTAssertEqual(after.status, 0, after.stdout + after.stderr)
        let counted = try after.stdout.split(separator: "\n").compactMap { line -> [String: Any]? in
            let event = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            guard let mutation = event?["mutation"] as? [String: Any], mutation["type"] as? String == "counted" else {
                return nil
            }
            return mutation
        }.first
        let result = try XCTUnwrap(counted, after.stdout)
        let batches = try XCTUnwrap(result["batches"] as? Int)
        XCTAssertEqual(result["partial"] as? Int, 0, "no batch was half stored")
        XCTAssertEqual(result["rows"] as? Int, batches * 2000)
        XCTAssertGreaterThanOrEqual(batches, acked.count, "every acknowledged batch survived the kill")
    }
}
