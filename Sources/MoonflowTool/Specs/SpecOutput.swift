import Foundation
import MoonflowHost
import LuaKit
import MoonflowLua
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
///
/// What waits is held in memory up to `memoryBudget` bytes for all files together;
/// past that, a waiting file's later lines go to a temporary file of its own (unlinked
/// at once, so nothing is left behind) and are read back, in order, when its turn
/// comes: a spec that prints gigabytes beside a slow one costs disk, not memory.
final class SpecOutput: Sendable {
    private struct Waiting {
        var events: [SpecEvent] = []
        /// Bytes of `events` counted against the budget.
        var bytes = 0
        /// Where the file's later events went once the budget was spent.
        var spill: SpillFile?
    }
    private struct State {
        var head = 0
        var waiting: [Waiting]
        var done: [Bool]
        var number = 0
        /// Bytes held in memory for every waiting file.
        var kept = 0
    }
    private let state: Locked<State>
    private let tap: Bool
    /// Under `--filter`, a file none of whose tests were selected prints no line of its own.
    private let filtering: Bool
    private let write: @Sendable (String) -> Void
    private let memoryBudget: Int

    init(
        files: Int, tap: Bool, filtering: Bool = false, memoryBudget: Int = 8 << 20,
        write: @escaping @Sendable (String) -> Void
    ) {
        state = Locked(
            State(waiting: Array(repeating: Waiting(), count: files), done: Array(repeating: false, count: files)))
        self.tap = tap
        self.filtering = filtering
        self.memoryBudget = memoryBudget
        self.write = write
    }

    /// Bytes of waiting output held in memory now (at most `memoryBudget`, plus one event).
    var keptBytes: Int { state.withLock { $0.kept } }

    /// Takes an event of the file at `index` (in the order the files print).
    func add(_ event: SpecEvent, file index: Int) {
        state.withLock { s in
            guard index == s.head else {
                if case .fileDone = event { s.done[index] = true }
                keep(event, file: index, &s)
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
                s.waiting[s.head] = Waiting()
                s.kept -= kept.bytes
                for e in kept.events { emit(e, &s) }
                if var spill = kept.spill {
                    spill.replay { emit($0, &s) }
                }
            }
        }
    }

    /// Holds a waiting file's event: in memory while the budget lasts, else (and for every
    /// later event of that file, to keep their order) in its spill file.
    private func keep(_ event: SpecEvent, file index: Int, _ s: inout State) {
        let size = Self.size(event)
        if s.waiting[index].spill == nil, s.kept + size > memoryBudget {
            s.waiting[index].spill = SpillFile()
        }
        if s.waiting[index].spill != nil, s.waiting[index].spill!.add(event) { return }
        s.waiting[index].events.append(event)
        s.waiting[index].bytes += size
        s.kept += size
    }

    /// What an event costs in memory, about.
    private static func size(_ event: SpecEvent) -> Int {
        switch event {
        case .printed(let text): return text.utf8.count + 16
        case .result(let r): return 128 + r.name.utf8.count + (r.message?.utf8.count ?? 0)
        case .fileDone: return 64
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
            write(
                "\(failed > 0 ? "✗" : "✓") \(LuaValue.escaped(file))  \(parts.joined(separator: ", "))  (\(Int(seconds * 1000)) ms)"
            )
        }
    }

    /// One test's line as it ends: `  ✓ name`, `  ✗ name: first line of the message`, `  - name (skipped)`;
    /// control characters in the name and the message escaped (`\027`).
    static func testLine(_ r: SpecRunner.Result) -> String {
        let name = LuaValue.escaped(r.fullName)
        switch r.status {
        case .success: return "  ✓ \(name)"
        case .pending: return "  - \(name) (skipped)"
        case .failure, .error:
            return "  ✗ \(name): \(LuaValue.escaped(EventLog.firstLine(r.message ?? "(no message)")))"
        }
    }

    private func tapLines(_ r: SpecRunner.Result, number: Int) -> [String] {
        let name = Self.tapDescription(r.fullName)
        switch r.status {
        case .success: return ["ok \(number) - \(name)"]
        case .pending:
            return [
                "ok \(number) - \(name) # SKIP \(r.message.map { Self.yamlPrintable(JUnitReport.firstLine($0)) } ?? "pending")"
            ]
        case .failure, .error:
            var lines = ["not ok \(number) - \(name)", "  ---", "  severity: \(r.status == .error ? "error" : "fail")"]
            if let location = r.location { lines.append("  at: \(Self.yamlPrintable(location))") }
            lines.append("  message: |")
            for line in Self.lines(r.message ?? "") { lines.append("    \(Self.yamlPrintable(line))") }
            lines.append("  ...")
            return lines
        }
    }

    /// `text`'s lines, split at every line break a harness sees: `\n`, `\r\n` and a lone `\r`
    /// (a Swift `Character` holds `\r\n` as one, which a split at `\n` does not see).
    static func lines(_ text: String) -> [String] {
        var lines: [String] = []
        var line = String.UnicodeScalarView()
        var afterCR = false
        for c in text.unicodeScalars {
            if c == "\n" && afterCR { afterCR = false; continue }
            afterCR = c == "\r"
            if c == "\n" || c == "\r" {
                lines.append(String(line)); line = String.UnicodeScalarView()
            } else {
                line.append(c)
            }
        }
        lines.append(String(line))
        return lines
    }

    /// `line` with the characters YAML does not allow in a block scalar (control characters but
    /// tab, and C1 ones but U+0085) written as Lua would write them, `\x01`: a harness that reads
    /// the diagnostics as YAML (TAP 13) would reject the whole block.
    static func yamlPrintable(_ line: String) -> String {
        var out = ""
        for c in line.unicodeScalars {
            let control = (c.value < 0x20 && c != "\t") || ((0x7F...0x9F).contains(c.value) && c.value != 0x85)
            if control || c.value == 0xFFFE || c.value == 0xFFFF {
                out +=
                    c.value > 0xFF
                    ? "\\u{\(String(c.value, radix: 16, uppercase: true))}"
                    : "\\x" + (c.value < 0x10 ? "0" : "") + String(c.value, radix: 16, uppercase: true)
            } else {
                out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// A test's name on its TAP line, as TAP 14 (and TAP::Parser, `prove`) reads one: `\` and `#`
    /// escaped with a backslash, so no part of a name reads as a `# SKIP` or `# TODO` directive,
    /// and a line break written `\n` (`\r`), so the whole name stays on its `ok`/`not ok` line;
    /// any other control character as `LuaValue.escaped` writes it (`\027`), off the terminal.
    static func tapDescription(_ name: String) -> String {
        var out = ""
        for c in name.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "#": out += "\\#"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case _ where c.value < 0x20 || (0x7F...0x9F).contains(c.value): out += LuaValue.escaped(String(c))
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}

/// A waiting file's events past the memory budget, in an unlinked temporary file: a
/// printed line as `p`, its length and its bytes; any other event as `e` and its place
/// in `others` (results are small and kept for the report anyway).
private struct SpillFile: Sendable {
    private var fd: Int32 = -1
    private var others: [SpecEvent] = []
    /// A write failed (a full disk): what came after stays in memory.
    private var failed = false

    init() {
        var template = Array((NSTemporaryDirectory() + "/moonflow-test-output-XXXXXX").utf8CString)
        fd = mkstemp(&template)
        if fd >= 0 { unlink(template) }
    }

    /// Appends `event`; false when it could not be written (the caller keeps it in memory,
    /// after what is here).
    mutating func add(_ event: SpecEvent) -> Bool {
        guard fd >= 0, !failed else { return false }
        let written: Bool
        switch event {
        case .printed(var text):
            // The text's own bytes, not a copy of them.
            written = text.withUTF8 { body in
                ([UInt8(ascii: "p")] + Self.length(body.count)).withUnsafeBytes { Self.writeAll(fd, $0) }
                    && Self.writeAll(fd, UnsafeRawBufferPointer(body))
            }
        default:
            written = ([UInt8(ascii: "e")] + Self.length(others.count)).withUnsafeBytes { Self.writeAll(fd, $0) }
            others.append(event)
        }
        if !written { failed = true }
        return written
    }

    /// Hands every event back in the order it came, then closes the file.
    mutating func replay(_ body: (SpecEvent) -> Void) {
        guard fd >= 0 else { return }
        defer { close(fd); fd = -1 }
        guard lseek(fd, 0, SEEK_SET) == 0 else { return }
        while let head = readExactly(9) {
            let n = head[1...].reduce(0) { $0 << 8 | Int($1) }
            if head[0] == UInt8(ascii: "p") {
                guard let text = readExactly(n) else { return }
                body(.printed(String(decoding: text, as: UTF8.self)))
            } else if n < others.count {
                body(others[n])
            }
        }
    }

    private static func length(_ n: Int) -> [UInt8] {
        (0..<8).reversed().map { UInt8(truncatingIfNeeded: UInt64(n) >> (8 * UInt64($0))) }
    }

    private func readExactly(_ n: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: n)
        var at = 0
        while at < n {
            let got = out.withUnsafeMutableBytes { read(fd, $0.baseAddress! + at, n - at) }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { return nil }
            at += got
        }
        return out
    }

    private static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) -> Bool {
        var at = 0
        while at < buffer.count {
            let n = Foundation.write(fd, buffer.baseAddress! + at, buffer.count - at)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            at += n
        }
        return true
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
                throw UsageError(
                    description: "--shard \(text): give I/N with 1 ≤ I ≤ N (the 2nd of 4 CI machines runs --shard 2/4)")
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

/// A spec's `io.stdout` under `moonflow test`: a real Lua file (`io.type(io.stdout)` is
/// `"file"`, as under busted), which the driver opens on the temporary file this makes and
/// unlinks at once. What the spec writes to it (and to `io.write`, which writes there) is read
/// back at each of the spec's prints and results and at the file's end, and goes where its
/// `print` goes, a line at a time, in the order it was written.
final class SpecStdout: Sendable {
    /// Where the driver opens the file, in append mode (it removes the name once open).
    let path: String
    private let fd: Int32
    /// The end of what was written, not yet a whole line.
    private let unfinished = Locked([UInt8]())

    /// Nil when no temporary file can be made (the spec's `io.stdout` stays the host's stand-in).
    init?() {
        var template = Array((NSTemporaryDirectory() + "/moonflow-test-stdout-XXXXXX").utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { return nil }
        self.fd = fd
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit { close(fd) }

    /// Removes the name, when the driver could not (it never ran).
    func unlinkPath() { unlink(path) }

    /// The whole lines written since the last call. With `printed` (a `print`'s text), the
    /// unfinished line written before it ends with that text, as `io.write("a ") print("b")`
    /// prints `a b`; with `endingLine` (a test's result, the file's end) an unfinished line
    /// comes out as a line of its own.
    ///
    /// Called on the thread that runs the spec's Lua, between its writes: the file is emptied
    /// after each read, so a spec that writes gigabytes costs no disk beyond its longest wait.
    func take(printed: String? = nil, endingLine: Bool = false) -> [String] {
        unfinished.withLock { rest in
            var lines: [String] = []
            var chunk = [UInt8](repeating: 0, count: 64 << 10)
            var offset: off_t = 0
            while true {
                let n = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, $0.count, offset) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { break }
                offset += off_t(n)
                for byte in chunk[..<n] {
                    if byte == UInt8(ascii: "\n") {
                        lines.append(String(decoding: rest, as: UTF8.self))
                        rest.removeAll(keepingCapacity: true)
                    } else {
                        rest.append(byte)
                    }
                }
            }
            if offset > 0 { _ = ftruncate(fd, 0) }
            if let printed {
                lines.append(String(decoding: rest, as: UTF8.self) + printed)
                rest.removeAll()
            } else if endingLine, !rest.isEmpty {
                lines.append(String(decoding: rest, as: UTF8.self))
                rest.removeAll()
            }
            return lines
        }
    }
}
