import Foundation
import XCTest

/// How much memory `replay` holds, through the built binary.
final class ReplayMemoryTests: ScratchTestCase {
    /// Runs `moonflow ARGS` in `folder` through `sh -c 'exec ...'` (the same process), its
    /// output in files; returns its exit status, its peak resident set in KB (`wait4`) and
    /// its standard output.
    private func peak(_ arguments: [String], in folder: URL) throws -> (status: Int32, kilobytes: Int, stdout: String) {
        let binary = try Moonflow.binary().path
        let out = folder.appendingPathComponent("peak-out.txt").path
        let command =
            "cd '\(folder.path)' && exec '\(binary)' " + arguments.map { "'\($0)'" }.joined(separator: " ")
            + " > '\(out)' 2>/dev/null"
        // Under AddressSanitizer (scripts/test runs these with the ASan binary) freed memory
        // waits in a quarantine of up to 256 MB: keep it small so the peak is what is live.
        var environment = ProcessInfo.processInfo.environment
        environment["ASAN_OPTIONS"] = (environment["ASAN_OPTIONS"].map { $0 + ":" } ?? "") + "quarantine_size_mb=1"
        let words: [String] = ["sh", "-c", command]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, "/bin/sh", nil, nil, argv, envp)
        guard spawned == 0 else { throw NSError(domain: "posix_spawn", code: Int(spawned)) }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        #if os(Linux)
        let kilobytes = Int(usage.ru_maxrss)
        #else
        let kilobytes = Int(usage.ru_maxrss) / 1024
        #endif
        let stdout = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        return ((status >> 8) & 0xFF, kilobytes, stdout)
    }

    /// `replay` held every recorded event and every event of the run in memory until the run
    /// ended: a 200k-input recording (8 MB) peaked at 721 MB. It streams now: replaying
    /// 30,000 inputs peaks where replaying 1,000 does (it grew by about 100 MB before).
    func testReplayStreamsALongRecording() throws {
        try write(
            "plugins/tick/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "tick", initial = { n = 0, note = "" }, state = { n = "integer", note = "string" },
              actions = { tick = {} }, mutations = { add = {} },
              handle = function() return { type = "add" } end,
              reduce = function(s) s.n = s.n + 1 s.note = string.rep("x", 64) .. s.n return s end,
            }
            """)
        func recording(_ inputs: Int) -> String {
            var text =
                #"{"record":"moonflow-session","format":1,"feature":"tick","version":1,"path":"plugins/tick","clock":"virtual"}"#
                + "\n"
            for t in 0..<inputs { text += #"{"input":{"type":"tick"},"t":\#(t)}"# + "\n" }
            return text
        }
        try write("short.jsonl", recording(1_000))
        try write("long.jsonl", recording(30_000))
        let short = try peak(["replay", "short.jsonl"], in: scratch)
        let long = try peak(["replay", "long.jsonl"], in: scratch)
        // The recordings hold inputs only: the run's events are new, and the replay says so.
        XCTAssertEqual(long.status, 1, long.stdout)
        XCTAssertTrue(
            long.stdout.contains("the run now gives 90001 events, the recording 0; the first new one:"), long.stdout)
        XCTAssertLessThan(
            long.kilobytes - short.kilobytes, 24 << 10,
            "peak \(short.kilobytes) KB for 1,000 inputs, \(long.kilobytes) KB for 30,000")
    }
}
