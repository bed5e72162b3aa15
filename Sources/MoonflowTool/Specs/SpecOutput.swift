import Foundation
import MoonflowHost
import MoonflowTesting
import Streams

/// What a spec file's run tells the report, as it happens.
package enum SpecEvent: Sendable {
    /// A test ended (or an error outside any test: a failing `describe` body).
    case result(SpecRunner.Result)
    /// A line the spec printed (`print`, `io.write`).
    case printed(String)
    /// The file is done: its results and how long it took.
    case fileDone(String, [SpecRunner.Result], seconds: Double)
}

/// `moonflow test`'s standard output, in the order of the files even when
/// they run in parallel (`--jobs`): the first unfinished file's lines go out
/// as its tests end; a later file's wait until every earlier file is done,
/// then go out together. TAP numbers are given as lines go out, so they count
/// up in the printed order.
final class SpecOutput: Sendable {
    private struct State {
        var head = 0
        var waiting: [[SpecEvent]]
        var done: [Bool]
        var number = 0
    }
    private let state: Locked<State>
    private let tap: Bool
    /// Under `--filter`, a file none of whose tests were selected prints no line of its own.
    private let filtering: Bool
    private let write: @Sendable (String) -> Void

    init(files: Int, tap: Bool, filtering: Bool = false, write: @escaping @Sendable (String) -> Void) {
        state = Locked(State(waiting: Array(repeating: [], count: files), done: Array(repeating: false, count: files)))
        self.tap = tap
        self.filtering = filtering
        self.write = write
    }

    /// Takes an event of the file at `index` (in the order the files print).
    func add(_ event: SpecEvent, file index: Int) {
        state.withLock { s in
            guard index == s.head else {
                s.waiting[index].append(event)
                if case .fileDone = event { s.done[index] = true }
                return
            }
            emit(event, &s)
            guard case .fileDone = event else { return }
            s.done[index] = true
            // The next files' lines, kept while this one ran.
            while s.head < s.done.count && s.done[s.head] {
                s.head += 1
                guard s.head < s.done.count else { break }
                let kept = s.waiting[s.head]
                s.waiting[s.head] = []
                for e in kept { emit(e, &s) }
            }
        }
    }

    private func emit(_ event: SpecEvent, _ s: inout State) {
        switch event {
        case .printed(let text):
            write(text)
        case .result(let r):
            if tap { s.number += 1; tapLines(r, number: s.number).forEach(write) } else { write(Self.testLine(r)) }
        case .fileDone(let file, let results, let seconds):
            guard !tap, !(filtering && results.isEmpty) else { return }
            let passed = results.filter { $0.status == .success }.count
            let failed = results.filter(\.failed).count
            let skipped = results.filter { $0.status == .pending }.count
            var parts = ["\(passed) passed"]
            if failed > 0 { parts.append("\(failed) failed") }
            if skipped > 0 { parts.append("\(skipped) skipped") }
            write("\(failed > 0 ? "✗" : "✓") \(file)  \(parts.joined(separator: ", "))  (\(Int(seconds * 1000)) ms)")
        }
    }

    /// One test's line as it ends: `  ✓ name`, `  ✗ name: first line of the message`, `  - name (skipped)`.
    static func testLine(_ r: SpecRunner.Result) -> String {
        switch r.status {
        case .success: return "  ✓ \(r.fullName)"
        case .pending: return "  - \(r.fullName) (skipped)"
        case .failure, .error: return "  ✗ \(r.fullName): \(EventLog.firstLine(r.message ?? "(no message)"))"
        }
    }

    private func tapLines(_ r: SpecRunner.Result, number: Int) -> [String] {
        switch r.status {
        case .success: return ["ok \(number) - \(r.fullName)"]
        case .pending: return ["ok \(number) - \(r.fullName) # SKIP \(r.message.map(EventLog.firstLine) ?? "pending")"]
        case .failure, .error:
            var lines = ["not ok \(number) - \(r.fullName)", "  ---", "  severity: \(r.status == .error ? "error" : "fail")"]
            if let location = r.location { lines.append("  at: \(location)") }
            lines.append("  message: |")
            for line in (r.message ?? "").split(separator: "\n", omittingEmptySubsequences: false) { lines.append("    \(line)") }
            lines.append("  ...")
            return lines
        }
    }
}

extension SpecRunner {
    /// `--shard I/N`: the files whose path hashes to shard I of N. A file stays
    /// in its shard when others are added or removed, so CI history per shard
    /// stays comparable.
    package struct Shard: Sendable, CustomStringConvertible {
        package let index: Int
        package let count: Int

        /// Parses `I/N` (1 ≤ I ≤ N).
        package init(parsing text: String) throws {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, let i = Int(parts[0]), let n = Int(parts[1]), n >= 1, i >= 1, i <= n else {
                throw UsageError(description: "--shard \(text): give I/N with 1 ≤ I ≤ N (the 2nd of 4 CI machines runs --shard 2/4)")
            }
            index = i
            count = n
        }

        package var description: String { "\(index)/\(count)" }

        package func files(of all: [String]) -> [String] {
            all.filter { Self.hash($0) % UInt64(count) == UInt64(index - 1) }
        }

        /// FNV-1a of the path's bytes, its bits then mixed (splitmix64's finalizer:
        /// paths share their endings, which FNV leaves in the low bits): the same
        /// on every machine and run.
        static func hash(_ path: String) -> UInt64 {
            var h: UInt64 = 0xcbf29ce484222325
            for byte in path.utf8 { h = (h ^ UInt64(byte)) &* 0x100000001b3 }
            h = (h ^ (h >> 30)) &* 0xbf58476d1ce4e5b9
            h = (h ^ (h >> 27)) &* 0x94d049bb133111eb
            return h ^ (h >> 31)
        }
    }
}
