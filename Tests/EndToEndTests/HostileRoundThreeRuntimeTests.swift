import Foundation
import XCTest

/// Round three (issue 48), the Lua runtime: views kept across reduces, writes waiting in Lua
/// on a stuck state, popen handles at close, links out of a plugin's folder, sandbox messages.
final class HostileRoundThreeRuntimeTests: ScratchTestCase {
    private func events(_ stdout: String) -> [[String: Any]] {
        stdout.split(separator: "\n").compactMap { line in
            try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }
    }

    private func errors(_ stdout: String) -> [String] {
        events(stdout).filter { $0["event"] as? String == "error" }.compactMap { $0["message"] as? String }
    }

    private func lastState(_ stdout: String) -> [String: Any]? {
        events(stdout).last { $0["event"] as? String == "state" }?["state"] as? [String: Any]
    }

    /// A shell command (a Lua long string) that runs until the moonflow process that started it
    /// ends (its parent changes), then ends too: a child that outlives its run would keep the
    /// harness waiting, which waits until every process holding its descriptors ends.
    private static let untilMoonflowEnds = #"[[while [ "$(cut -d' ' -f4 /proc/$$/stat)" = "$PPID" ]; do sleep 0.1; done]]"#

    /// Runs plugins/NAME on the virtual clock with `lines` as input, in jsonl.
    private func run(_ name: String, _ lines: [String], _ extra: [String] = [], timeout: TimeInterval = 60) throws -> Moonflow.Result {
        try write("in.jsonl", lines.joined(separator: "\n") + "\n")
        return try Moonflow.run(["run", "plugins/\(name)", "--actions", "in.jsonl", "--format", "jsonl", "--clock", "virtual"] + extra,
                                in: scratch, timeout: timeout)
    }

    // MARK: - Item 16: a view kept from one reduce fails in a later reduce

    /// A view kept in a global by one reduce read and wrote inside a later one: after the
    /// reducer replaced the state's table, the write landed in the old table, silently.
    func testAViewKeptFromOneReduceFailsInALaterReduceNamingTheField() throws {
        try write("plugins/later/init.lua", """
            local mf = require "moonflow"
            local KEPT, ITEMS
            return mf.feature {
              name = "later", initial = { count = 0, items = { n = 0 } },
              actions = { keep = {}, replace = {}, poke = {}, peek = {}, touch = {} },
              mutations = { keep = {}, replace = {}, poke = {}, peek = {}, touch = {} },
              handle = function(a) return { type = a.type } end,
              reduce = function(s, m)
                if m.type == "keep" then KEPT = s ITEMS = s.items end
                if m.type == "replace" then return { count = s.count + 1, items = { n = 0 } } end
                if m.type == "poke" then KEPT.count = 777 end
                if m.type == "peek" then s.count = ITEMS.n + 100 end
                if m.type == "touch" then ITEMS.n = 5 end
                return s
              end,
            }
            """)
        for sandbox in [[], ["--sandbox"]] {
            let result = try run("later", [#"{"type":"keep"}"#, #"{"type":"replace"}"#, #"{"type":"poke"}"#,
                                           #"{"type":"peek"}"#, #"{"type":"touch"}"#], sandbox)
            let messages = errors(result.stdout)
            XCTAssertEqual(messages.count, 3, "\(sandbox): \(result.stdout)")
            XCTAssertTrue(messages.first?.contains("count: this view of the state was kept after its reduce call returned") == true,
                          "\(sandbox): \(messages)")
            for message in messages.dropFirst() {
                XCTAssertTrue(message.contains("n: this view of the state was kept after its reduce call returned"), "\(sandbox): \(message)")
            }
            let state = lastState(result.stdout)
            XCTAssertEqual(state?["count"] as? Int, 1, "nothing written through a kept view (\(sandbox)): \(result.stdout)")
            XCTAssertEqual((state?["items"] as? [String: Any])?["n"] as? Int, 0, "\(sandbox): \(result.stdout)")
        }
    }

    // MARK: - Item 5: a popen handle, or a finalizer that blocks, does not keep the process alive

    /// A plugin (trusted) that starts a child with io.popen and drops the handle: Lua's
    /// finalizer pclosed it as the state closed, which waits for the child, and `run` and
    /// `test` never ended. (The child here runs until moonflow ends: the harness kills them
    /// after 25 s.)
    func testAPopenHandleDroppedWithoutCloseDoesNotKeepRunOrTestAlive() throws {
        try write("plugins/piper/init.lua", """
            local mf = require "moonflow"
            return mf.feature {
              name = "piper", initial = { n = 0 }, actions = { start = {} }, mutations = { bump = {} },
              handle = function() io.popen(\(Self.untilMoonflowEnds)) return { type = "bump" } end,
              reduce = function(s) s.n = s.n + 1 return s end,
            }
            """)
        try write("plugins/piper/spec/piper_spec.lua", """
            local test = require "moonflow.test"
            describe("piper", function()
              it("starts a child", function()
                test.store("piper"):send({ type = "start" }, function(s) s.n = 1 end)
                collectgarbage()
              end)
            end)
            """)
        for clock in ["virtual", "real"] {
            let result = try Moonflow.run(["run", "plugins/piper", "--actions", "-", "--format", "jsonl", "--clock", clock],
                                          in: scratch, timeout: 25, input: #"{"type":"start"}"# + "\n")
            XCTAssertEqual(result.status, 0, "\(clock): \(result.stdout)\(result.stderr)")
            XCTAssertEqual(lastState(result.stdout)?["n"] as? Int, 1, result.stdout)
        }
        let test = try Moonflow.run(["test", "plugins/piper/spec"], in: scratch, timeout: 25)
        XCTAssertEqual(test.status, 0, test.stdout + test.stderr)
    }

    /// Closing a state is bounded: a finalizer that blocks in C as the state closes (past the
    /// time limit and the stuck grace) leaves the state behind, and the run ends.
    func testAFinalizerThatBlocksAsTheStateClosesDoesNotKeepTheRunAlive() throws {
        try write("plugins/holdon/init.lua", """
            local mf = require "moonflow"
            HOLD = setmetatable({}, { __gc = function() os.execute(\(Self.untilMoonflowEnds)) end })
            return mf.feature {
              name = "holdon", initial = { n = 0 }, actions = { bump = {} }, mutations = { bump = {} },
              handle = function() return { type = "bump" } end,
              reduce = function(s) s.n = s.n + 1 return s end,
            }
            """)
        let result = try Moonflow.run(["run", "plugins/holdon", "--actions", "-", "--format", "jsonl", "--clock", "virtual",
                                       "--time-limit", "200"], in: scratch, timeout: 25, input: #"{"type":"bump"}"# + "\n")
        XCTAssertEqual(lastState(result.stdout)?["n"] as? Int, 1, result.stdout + result.stderr)
    }

    // MARK: - Item 7: a sandboxed plugin's database file that links out of its folder

    /// A declared SQLite file (or its WAL file) that is a link to another app's database was
    /// opened and written under the sandbox; also with `--db DIR`. A file that links inside
    /// the folder still opens.
    func testASandboxedDatabaseFileThatLinksOutOfItsFolderIsRefused() throws {
        let other = scratch.appendingPathComponent("other.db").path
        try write("plugins/db/init.lua", """
            local mf = require "moonflow"
            return mf.feature {
              name = "db", initial = { n = 0 }, actions = { go = {} }, mutations = { got = {} },
              repositories = { x = { sqlite = "x.db" } },
              handle = function(a, s, env) env.services.x:put({ id = 1, v = "written" }) return { type = "got" } end,
              reduce = function(s) s.n = s.n + 1 return s end,
            }
            """)
        let fm = FileManager.default
        let cases: [(link: String, to: String, extra: [String])] = [
            ("plugins/db/x.db", "../../other.db", []),
            ("plugins/db/x.db-wal", "../../other.db", []),
            ("data/x.db", "../other.db", ["--db", "data"]),
        ]
        for (link, target, extra) in cases {
            try? fm.removeItem(atPath: other)
            try fm.createDirectory(at: scratch.appendingPathComponent("data"), withIntermediateDirectories: true)
            let linkPath = scratch.appendingPathComponent(link).path
            try fm.createSymbolicLink(atPath: linkPath, withDestinationPath: target)
            defer { try? fm.removeItem(atPath: linkPath) }
            let result = try run("db", [#"{"type":"go"}"#], ["--sandbox"] + extra)
            XCTAssertEqual(result.status, 1, "\(link): \(result.stdout)")
            let message = errors(result.stdout).first ?? ""
            XCTAssertTrue(message.hasPrefix("plugins/db/init.lua: repositories.x.sqlite = \"x.db\": "), "\(link): \(message)")
            XCTAssertTrue(message.contains("leads outside the data folder"), "\(link): \(message)")
            XCTAssertFalse(fm.fileExists(atPath: other), "\(link): nothing written through the link")
        }
        // A link that stays in the folder opens (its target made as it opens).
        try fm.createSymbolicLink(atPath: scratch.appendingPathComponent("plugins/db/x.db").path, withDestinationPath: "real.db")
        let inside = try run("db", [#"{"type":"go"}"#], ["--sandbox"])
        XCTAssertEqual(inside.status, 0, inside.stdout)
        XCTAssertEqual(lastState(inside.stdout)?["n"] as? Int, 1, inside.stdout)
    }

    // MARK: - Also found: a sandboxed rawset's error names the plugin's line

    /// Under `--sandbox` the refusal of `rawset` on a view pointed at the sandbox's own code
    /// (`[moonflow sandbox]:64`), which wraps rawset, instead of the plugin's line.
    func testARawsetOnAViewUnderTheSandboxNamesThePluginsLine() throws {
        try write("plugins/raw/init.lua", """
            local mf = require "moonflow"
            return mf.feature {
              name = "raw", initial = { count = 0 }, actions = { raw = {} }, mutations = { raw = {} },
              handle = function(a) return { type = "raw" } end,
              reduce = function(s)
                rawset(s, "count", 5)
                return s
              end,
            }
            """)
        for extra in [[], ["--sandbox"]] {
            let result = try run("raw", [#"{"type":"raw"}"#], extra)
            let events = events(result.stdout).filter { $0["event"] as? String == "error" }
            XCTAssertEqual(events.count, 1, "\(extra): \(result.stdout)")
            let message = events.first?["message"] as? String ?? ""
            XCTAssertTrue(message.contains("rawset on count: the state is a view"), "\(extra): \(message)")
            XCTAssertTrue(message.hasPrefix("plugins/raw/init.lua:6: "), "\(extra): \(message)")
            XCTAssertEqual(events.first?["where"] as? String, "plugins/raw/init.lua:6", "\(extra): \(result.stdout)")
        }
    }

    // MARK: - Item 12: stuck calls do not pile up

    /// Each stuck call left its thread and whole Lua state behind for good, and the run
    /// rebuilt without end (12 stuck calls of a 30 MB state: 120 MB -> 983 MB). A run keeps at
    /// most 4 states stuck at once: the fourth ends it, saying so.
    func testARunEndsWhenFourStatesAreStuckAtOnceSayingSo() throws {
        try write("plugins/blocking/init.lua", """
            local mf = require "moonflow"
            return mf.feature {
              name = "blocking", initial = { count = 0 },
              actions = { bump = {}, block = {} }, mutations = { bump = {} },
              handle = function(a)
                if a.type == "block" then os.execute(\(Self.untilMoonflowEnds)) end
                return { type = "bump" }
              end,
              reduce = function(s) s.count = s.count + 1 return s end,
            }
            """)
        let lines = [#"{"type":"bump"}"#] + Array(repeating: #"{"type":"block"}"#, count: 5) + [#"{"type":"bump"}"#]
        let result = try run("blocking", lines, ["--time-limit", "50"], timeout: 60)
        XCTAssertEqual(result.status, 1, result.stderr)
        let stuck = errors(result.stdout).filter { $0.contains("cannot be interrupted") }
        XCTAssertEqual(stuck.count, 4, result.stdout)
        XCTAssertEqual(stuck.filter { $0.contains("freed once the call returns), and the feature is loaded again") }.count, 3, result.stdout)
        XCTAssertTrue(stuck.last?.contains("4 Lua states stuck so are left behind now, the most a run keeps") == true, stuck.last ?? "")
        XCTAssertTrue(stuck.last?.hasSuffix("the run ends") == true, stuck.last ?? "")
    }

    /// `test` too: each stuck test left its state behind and the file went on in a fresh one.
    /// With 4 left behind at once, the file's later tests do not run, and the failure says so.
    func testASpecFileStopsMakingStatesAtTheCapSayingSo() throws {
        try write("plugins/blocking/init.lua", """
            local mf = require "moonflow"
            return mf.feature {
              name = "blocking", initial = { count = 0 }, actions = { block = {} }, mutations = {},
              handle = function() os.execute(\(Self.untilMoonflowEnds)) end,
              reduce = function(s) return s end,
            }
            """)
        try write("plugins/blocking/spec/blocking_spec.lua", """
            local test = require "moonflow.test"
            describe("blocking", function()
              for i = 1, 5 do
                it("blocks " .. i, function() test.store("blocking"):send { type = "block" } end)
              end
            end)
            """)
        let result = try Moonflow.run(["test", "--time-limit", "50", "plugins/blocking/spec"], in: scratch, timeout: 60)
        XCTAssertEqual(result.status, 1, result.stdout)
        for i in 1...4 {
            XCTAssertTrue(result.stdout.contains("✗ blocking blocks \(i): stuck in a call that ran on past the time limit"), result.stdout)
        }
        XCTAssertTrue(result.stdout.contains("4 Lua states stuck so are left behind now, the most a run keeps (each holds its memory "
                                             + "until its call returns): the tests after it in this file do not run"), result.stdout)
        XCTAssertFalse(result.stdout.contains("blocks 5"), "the fifth test did not run: \(result.stdout)")
    }
}
