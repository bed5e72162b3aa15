import Foundation
import XCTest

/// A run's `--format jsonl` output read back: its events, its errors' messages, its last state.
extension ScratchTestCase {
    func jsonlEvents(_ stdout: String) -> [[String: Any]] {
        stdout.split(separator: "\n").compactMap { line in
            try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }
    }

    /// Every line as a JSON object, failing the test at a line that is not one.
    func jsonlObjects(_ stdout: String) -> [[String: Any]] {
        stdout.split(separator: "\n").map { line in
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            XCTAssertNotNil(object, "not one JSON object: \(line)")
            return object ?? [:]
        }
    }

    func jsonlErrors(_ stdout: String) -> [String] {
        jsonlEvents(stdout).filter { $0["event"] as? String == "error" }.compactMap { $0["message"] as? String }
    }

    func jsonlLastState(_ stdout: String) -> [String: Any]? {
        jsonlEvents(stdout).last { $0["event"] as? String == "state" }?["state"] as? [String: Any]
    }

    /// A shell command (a Lua long string) that runs until the moonflow process that started it
    /// ends (its parent changes), then ends too: a child that outlives its run would keep the
    /// harness waiting, which waits until every process holding its descriptors ends.
    static let untilMoonflowEnds = #"[[while [ "$(cut -d' ' -f4 /proc/$$/stat)" = "$PPID" ]; do sleep 0.1; done]]"#

    /// Runs plugins/NAME on the virtual clock with `lines` as input, in jsonl.
    func runJSONL(
        _ name: String, _ lines: [String], _ extra: [String] = [], timeout: TimeInterval = 60
    ) throws -> Moonflow.Result {
        try write("in.jsonl", lines.joined(separator: "\n") + "\n")
        return try Moonflow.run(
            ["run", "plugins/\(name)", "--actions", "in.jsonl", "--format", "jsonl", "--clock", "virtual"] + extra,
            in: scratch, timeout: timeout)
    }
}
