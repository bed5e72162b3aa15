import MoonflowHost
import LuaKit
import MoonflowLua
@testable import MoonflowTool
import Streams
import XCTest

/// How `moonflow test` prints while files run in parallel: in file order,
/// the first unfinished file's lines at once, a later file's when it is its turn.
final class SpecOutputTests: XCTestCase {
    private func result(
        _ file: String, _ name: String, _ status: SpecRunner.Result.Status = .success
    ) -> SpecRunner.Result {
        SpecRunner.Result(
            file: file, describePath: ["d"], name: name, status: status,
            message: status == .success ? nil : "a.lua:3: boom\nmore", location: nil, seconds: 0)
    }

    func testTheFirstFilesLinesGoOutAtOnceAndALaterFilesWaitForIt() {
        let printed = Locked([String]())
        let output = SpecOutput(files: 2, tap: false) { line in printed.withLock { $0.append(line) } }
        output.add(.result(result("b", "later")), file: 1)
        XCTAssertEqual(printed.withLock { $0 }, [], "the second file waits while the first runs")
        output.add(.result(result("a", "first")), file: 0)
        XCTAssertEqual(printed.withLock { $0 }, ["  ✓ d first"], "the first file's test is printed as it ends")
        output.add(.fileDone("b", [result("b", "later")], seconds: 0), file: 1)
        output.add(.printed("hello"), file: 0)
        output.add(.result(result("a", "second", .failure)), file: 0)
        output.add(.fileDone("a", [result("a", "first"), result("a", "second", .failure)], seconds: 0.002), file: 0)
        XCTAssertEqual(
            printed.withLock { $0 },
            [
                "  ✓ d first", "hello", "  ✗ d second: a.lua:3: boom", "✗ a  1 passed, 1 failed  (2 ms)",
                "  ✓ d later", "✓ b  1 passed  (0 ms)",
            ])
    }

    /// A printing spec beside a slow one: its output waited in memory (1.9 GB was seen).
    /// Past the budget it goes to a temporary file and comes back, in order and whole,
    /// when its turn comes; the memory held stays near the budget.
    func testOutputThatWaitsPastTheBudgetGoesToDiskAndComesBackInOrder() {
        let printed = Locked((count: 0, bytes: 0, inOrder: true, lines: [String]()))
        let output = SpecOutput(files: 2, tap: false, memoryBudget: 64 << 10) { line in
            printed.withLock { p in
                if line.hasPrefix("line ") {
                    p.inOrder = p.inOrder && line.hasPrefix("line \(p.count) ")
                    p.count += 1
                    p.bytes += line.utf8.count
                } else {
                    p.lines.append(line)
                }
            }
        }
        let filler = String(repeating: "x", count: 1000)
        var most = 0
        for i in 0..<20_000 {
            output.add(.printed("line \(i) \(filler)"), file: 1)
            if i == 10_000 { output.add(.result(result("b", "middle")), file: 1) }
            if i % 1000 == 0 { most = max(most, output.keptBytes) }
        }
        output.add(.fileDone("b", [result("b", "middle")], seconds: 0), file: 1)
        XCTAssertLessThanOrEqual(max(most, output.keptBytes), 64 << 10, "20 MB printed, no more than the budget held")
        XCTAssertEqual(printed.withLock { $0.count }, 0, "the second file waits while the first runs")
        output.add(.result(result("a", "first")), file: 0)
        output.add(.fileDone("a", [result("a", "first")], seconds: 0), file: 0)
        let p = printed.withLock { $0 }
        XCTAssertEqual(p.count, 20_000)
        XCTAssertTrue(p.inOrder)
        XCTAssertEqual(p.lines, ["  ✓ d first", "✓ a  1 passed  (0 ms)", "  ✓ d middle", "✓ b  1 passed  (0 ms)"])
        XCTAssertEqual(output.keptBytes, 0)
    }

    func testTAPNumbersCountUpInPrintedOrder() {
        let printed = Locked([String]())
        let output = SpecOutput(files: 2, tap: true) { line in printed.withLock { $0.append(line) } }
        output.add(.result(result("b", "x")), file: 1)
        output.add(.fileDone("b", [], seconds: 0), file: 1)
        output.add(.result(result("a", "y")), file: 0)
        output.add(.fileDone("a", [], seconds: 0), file: 0)
        XCTAssertEqual(printed.withLock { $0 }, ["ok 1 - d y", "ok 2 - d x"])
    }

    func testShardsAreStableAndCoverEveryFileOnce() throws {
        let files = (0..<40).map { "plugins/p\($0)/spec/p\($0)_spec.lua" }
        let shards = try (1...4).map { try SpecRunner.Shard(parsing: "\($0)/4").files(of: files) }
        XCTAssertEqual(shards.flatMap { $0 }.sorted(), files.sorted())
        XCTAssertTrue(shards.allSatisfy { !$0.isEmpty }, "\(shards.map(\.count))")
        // A file stays in its shard when others come and go.
        let fewer = try SpecRunner.Shard(parsing: "2/4").files(of: Array(files.prefix(20)))
        XCTAssertEqual(fewer, shards[1].filter { files.prefix(20).contains($0) })
        for bad in ["0/4", "5/4", "1/0", "x", "1/2/3", "-1/2"] {
            XCTAssertThrowsError(try SpecRunner.Shard(parsing: bad), bad)
        }
    }
}
