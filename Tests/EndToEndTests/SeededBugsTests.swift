import Foundation
import XCTest

/// The explorer's benchmark of seeded bugs (bench/explore, `scripts/bench explore`): every
/// screen's bug is real and every fix holds, so the bench counts what it says it counts.
final class SeededBugsTests: XCTestCase {
    private static let corpus = Moonflow.root.appendingPathComponent("bench/explore")

    /// corpus.lua's screens: name and grade, in order.
    private func listed() throws -> [(name: String, grade: String)] {
        let text = try String(contentsOf: Self.corpus.appendingPathComponent("corpus.lua"), encoding: .utf8)
        let pattern = try NSRegularExpression(
            pattern: #"name = "([a-z]+)", grade = "(easy|medium|hard)", check = "invariant \w+""#)
        return pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).map { match in
            (String(text[Range(match.range(at: 1), in: text)!]), String(text[Range(match.range(at: 2), in: text)!]))
        }
    }

    func testEveryScreenIsListedWithItsFixAndItsSpec() throws {
        let screens = try listed()
        XCTAssertGreaterThanOrEqual(screens.count, 10, "the corpus keeps at least 10 screens")
        XCTAssertGreaterThanOrEqual(screens.filter { $0.grade == "hard" }.count, 3, "and at least 3 hard ones")
        let fm = FileManager.default
        let folders = try fm.contentsOfDirectory(atPath: Self.corpus.path).filter {
            fm.fileExists(atPath: Self.corpus.appendingPathComponent("\($0)/init.lua").path)
        }
        XCTAssertEqual(Set(folders), Set(screens.map(\.name)), "every screen folder is in corpus.lua, and only those")
        for screen in screens {
            for file in ["init.lua", "fixed/init.lua", "spec/bug_spec.lua"] {
                XCTAssertTrue(
                    fm.fileExists(atPath: Self.corpus.appendingPathComponent("\(screen.name)/\(file)").path),
                    "\(screen.name) has no \(file)")
            }
        }
    }

    /// Each screen's bug_spec.lua breaks the listed check on the buggy screen by hand, and holds
    /// on the fix through the same steps and a 20-run exploration with seed 1.
    func testEachBugIsRealAndEachFixHolds() throws {
        let screens = try listed()
        let result = try Moonflow.run(["test", "bench/explore"], timeout: 300)
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        XCTAssertTrue(result.stdout.contains("\(2 * screens.count) passed, 0 failed"), result.stdout)
        for screen in screens {
            XCTAssertTrue(
                result.stdout.contains("✓ \(screen.name) holds once fixed, through the same steps and an exploration"),
                result.stdout)
        }
    }

    /// What `scripts/bench explore` reads: a line per exploration, random and guided, of the
    /// screen and of its fix (here the pager, 10 runs, seed 1).
    func testTheBenchHarnessPrintsALinePerExploration() throws {
        let result = try Moonflow.run(
            ["test", "--time-limit", "60000", "bench/explore/harness.lua"], timeout: 120,
            environment: [
                "MOONFLOW_BENCH_SCALE": "10", "MOONFLOW_EXPLORE_SEEDS": "1", "MOONFLOW_EXPLORE_ONLY": "pager",
            ])
        XCTAssertEqual(result.status, 0, result.stdout + result.stderr)
        var lines: [[String]] = []
        for line in result.stdout.split(separator: "\n") {
            let fields: [String] = line.split(separator: "\t").map { String($0) }
            if fields.count == 12 && fields[0] == "explore-bench" && fields[1] == "result" { lines.append(fields) }
        }
        // explore-bench, result, screen, grade, variant, mode, seed, outcome, seconds, runs, shrunk, check
        let random = lines.filter { $0[5] == "random" }
        XCTAssertEqual(
            random.map { "\($0[2]) \($0[4]) \($0[7])" }, ["pager bug found", "pager fixed none"], result.stdout)
        XCTAssertEqual(random.first?.last, "invariant pageInRange", result.stdout)
        XCTAssertEqual(lines.filter { $0[4] == "fixed" && $0[7] != "none" }.count, 0, result.stdout)
    }
}
