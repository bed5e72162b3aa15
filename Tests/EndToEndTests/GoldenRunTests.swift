import Foundation
import XCTest

/// Every `plugins/NAME/golden/CASE.in.jsonl` is fed to
/// `moonflow run plugins/NAME --actions ... --format jsonl --clock virtual`; its
/// standard output must equal `CASE.out.jsonl` byte for byte, and it must exit
/// 0 (1 when the case name contains `error`).
///
/// `MOONFLOW_UPDATE_GOLDEN=1 swift test --filter GoldenRunTests` rewrites the
/// `.out.jsonl` files from what the binary prints; read them before committing,
/// they are the spec.
final class GoldenRunTests: XCTestCase {
    struct Case {
        let plugin: String
        let name: String
        var input: String { "plugins/\(plugin)/golden/\(name).in.jsonl" }
        var output: String { "plugins/\(plugin)/golden/\(name).out.jsonl" }
        var expectedStatus: Int32 { name.contains("error") ? 1 : 0 }
    }

    /// Plugin folders (with `init.lua`) under `plugins/`, sorted.
    static func plugins() throws -> [String] {
        let fm = FileManager.default
        let dir = Moonflow.root.appendingPathComponent("plugins")
        return try fm.contentsOfDirectory(atPath: dir.path).filter {
            fm.fileExists(atPath: dir.appendingPathComponent($0).appendingPathComponent("init.lua").path)
        }.sorted()
    }

    static func cases() throws -> [Case] {
        let fm = FileManager.default
        return try plugins().flatMap { plugin -> [Case] in
            let golden = Moonflow.root.appendingPathComponent("plugins/\(plugin)/golden")
            guard let files = try? fm.contentsOfDirectory(atPath: golden.path) else { return [] }
            return files.filter { $0.hasSuffix(".in.jsonl") }.sorted()
                .map { Case(plugin: plugin, name: String($0.dropLast(".in.jsonl".count))) }
        }
    }

    func testEveryGoldenCaseMatches() throws {
        let cases = try Self.cases()
        XCTAssertFalse(cases.isEmpty, "no golden cases found under \(Moonflow.root.path)/plugins/*/golden")
        let update = ProcessInfo.processInfo.environment["MOONFLOW_UPDATE_GOLDEN"] == "1"
        for c in cases {
            let result = try Moonflow.run([
                "run", "plugins/\(c.plugin)", "--actions", c.input, "--format", "jsonl", "--clock", "virtual", "--db",
                ":memory:",
            ])
            XCTAssertEqual(
                result.status, c.expectedStatus,
                "\(c.input): exit status \(result.status), expected \(c.expectedStatus) (\(c.expectedStatus == 1 ? "the case name says error" : "no 'error' in the case name")); stderr: \(result.stderr)"
            )
            let outURL = Moonflow.root.appendingPathComponent(c.output)
            if update {
                try result.stdout.write(to: outURL, atomically: true, encoding: .utf8)
                continue
            }
            guard let expected = try? String(contentsOf: outURL, encoding: .utf8) else {
                XCTFail("\(c.output) is missing; write it by hand or run with MOONFLOW_UPDATE_GOLDEN=1 and read it")
                continue
            }
            if result.stdout != expected {
                XCTFail(
                    "\(c.input): output differs from \(c.output) (- expected, + actual):\n\(Moonflow.diff(expected: expected, actual: result.stdout))"
                )
            }
        }
    }

    /// The example plugins this suite owns each show their interesting paths in at least two cases.
    func testExamplePluginsHaveTwoCasesEach() throws {
        let cases = try Self.cases()
        for plugin in ["counter", "records", "search", "colors", "users"] {
            XCTAssertGreaterThanOrEqual(
                cases.filter { $0.plugin == plugin }.count, 2, "plugins/\(plugin)/golden needs at least two cases")
        }
    }

    /// Every output file belongs to an input (a renamed case leaves no stale spec behind).
    func testNoOrphanOutputs() throws {
        let fm = FileManager.default
        for plugin in try Self.plugins() {
            let golden = Moonflow.root.appendingPathComponent("plugins/\(plugin)/golden")
            guard let files = try? fm.contentsOfDirectory(atPath: golden.path) else { continue }
            for out in files where out.hasSuffix(".out.jsonl") {
                let input = String(out.dropLast(".out.jsonl".count)) + ".in.jsonl"
                XCTAssertTrue(files.contains(input), "plugins/\(plugin)/golden/\(out) has no \(input)")
            }
        }
    }

    func testDiffShowsExpectedAndActualLines() {
        let d = Moonflow.diff(expected: "a\nb\nc", actual: "a\nx\nc")
        XCTAssertEqual(d, "  a\n- b\n+ x\n  c")
    }
}
