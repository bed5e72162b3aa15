import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import MoonflowRun
import MoonflowTesting
import Streams

/// `moonflow test`: runs busted specs (`*_spec.lua`) inside the host, each
/// file in a fresh Lua state with `require "moonflow.test"` available, and
/// reports every failure with the spec's `file:line`, its message and diff.
///
///     var options = SpecRunner.Options(paths: ["plugins/counter/spec"])
///     options.junitPath = "report.xml"
///     let status = SpecRunner(options: options).run()   // 0 when nothing failed
///
/// busted itself (Debian's `lua-busted`) runs in the host's state: its core,
/// `describe`/`it`/`pending`/`before_each`/`after_each`, luassert with spies,
/// stubs and mocks, and its name filter. Its command-line runner and output
/// handlers are not used: the host reports results itself (text, TAP, JUnit).
package struct SpecRunner: Sendable {
    package struct Options: Sendable {
        /// Spec files or folders (searched for `*_spec.lua`); empty: every
        /// `plugins/*/spec/*_spec.lua` under the current folder.
        package var paths: [String] = []
        /// Only tests whose full name (describe names and the `it` name) contains this text.
        package var filter: String?
        package var junitPath: String?
        package var tap = false
        package var timeLimitMs: Int64? = 1000
        /// Each test's (`it`'s) limit, spec code and waits for services together
        /// (the command line gives ten times `timeLimitMs`); a test past it fails
        /// naming where it was stopped, and the next one runs.
        package var testTimeLimitMs: Int64? = 10_000
        /// How many spec files run at once (each in its own Lua state); nil: one per core.
        package var jobs: Int?
        /// Only this shard of the files (`--shard I/N`).
        package var shard: Shard?
        package var memoryLimitMB: Int? = 512
        /// `.sandboxed`: the plugins under test run with the sandbox's limits and
        /// globals of their own; busted and the specs keep the whole library.
        package var profile: LuaState.Profile = .trusted
        /// `--seed`, `--runs`, `--length`, `--steps`, `--seconds`, `--no-guided`: every `T.explore` of the run takes them.
        package var explore = TestModule.ExploreDefaults()
        /// `--explore`: `paths` are plugins (names in `./plugins` or folders; none: every plugin
        /// there), each explored with its declared actions and invariants instead of running specs.
        package var exploring = false
        /// `--coverage`: count the lines of the plugins' Lua run, print a table per file and
        /// write lcov's tracefile here.
        package var coveragePath: String?
        /// Called with each spec file's host before the file loads, on the thread that runs it:
        /// `--debug` serves its Lua state (and `--debug-wait` waits there for the editor).
        package var prepareHost: (@Sendable (FeatureHost) -> Void)?
        /// Set under `--debug`: the debugger can go back in a spec file (`SpecTravel`), which
        /// then runs again from its start.
        package var travel: SpecTravel?
        /// The spec's global `arg`, from index 0, as busted's runner gives it: the runner, then
        /// its arguments. Nil: this process's, the `moonflow` binary and the words after `test`.
        package var arg: [String]?
        package init(paths: [String] = []) { self.paths = paths }
        /// Sets every exploration's numbers. A time budget (`seconds`) is the exploration's own:
        /// each test's limit (`testTimeLimitMs`, from `--time-limit`) grows by it, so the budget
        /// is not cut short by the limit of a test that did not ask for it.
        package mutating func setExplore(
            seed: Int64?, runs: Int?, length: Int?, steps: Int? = nil, seconds: Double? = nil, guided: Bool? = nil
        ) {
            explore = TestModule.ExploreDefaults(
                seed: seed, runs: runs, length: length, steps: steps, seconds: seconds, guided: guided)
            if let seconds, let limit = testTimeLimitMs {
                testTimeLimitMs = limit + Int64((seconds * 1000).rounded(.up))
            }
        }
    }

    /// One `it` (or an error outside any `it`: a failing `describe` body, a
    /// spec file that does not load, a failing `before_each`).
    package struct Result: Sendable {
        package enum Status: String, Sendable { case success, failure, error, pending }
        package let file: String
        /// The names of the enclosing `describe` blocks.
        package let describePath: [String]
        package let name: String
        package let status: Status
        /// The failure or error message (with `file:line:` in front when known).
        package let message: String?
        /// Where it failed, else where the `it` is.
        package let location: String?
        package let seconds: Double

        package var fullName: String { (describePath + [name]).joined(separator: " ") }
        package var failed: Bool { status == .failure || status == .error }
    }

    package let options: Options
    private let write: @Sendable (String) -> Void

    package init(
        options: Options,
        write: @escaping @Sendable (String) -> Void = { FileHandle.standardOutput.write(Data(($0 + "\n").utf8)) }
    ) {
        self.options = options
        self.write = write
    }

    /// A problem with the command line itself (a missing path): exit status 2.
    package struct UsageError: Error, CustomStringConvertible {
        package let description: String
    }

    /// The spec files to run, sorted.
    /// - Throws: `UsageError` when a given path does not exist.
    package func specFiles() throws -> [String] {
        let fm = FileManager.default
        if options.exploring { return try explorePlugins() }
        if options.paths.isEmpty {
            guard let plugins = try? fm.contentsOfDirectory(atPath: "plugins") else { return [] }
            return plugins.sorted().flatMap { plugin -> [String] in
                let dir = "plugins/\(plugin)/spec"
                let names = (try? fm.contentsOfDirectory(atPath: dir)) ?? []
                return names.filter { $0.hasSuffix("_spec.lua") }.sorted().map { "\(dir)/\($0)" }
            }
        }
        var files: [String] = []
        for path in options.paths {
            var isDir: ObjCBool = false
            guard fm.fileExists(atPath: path, isDirectory: &isDir) else {
                throw UsageError(
                    description: "\(path) does not exist; give spec files (*_spec.lua) or folders that hold them")
            }
            if !isDir.boolValue { files.append(path); continue }
            let base = path.hasSuffix("/") ? String(path.dropLast()) : path
            let found = FolderWalk.paths(under: path).filter { $0.hasSuffix("_spec.lua") }.map { "\(base)/\($0)" }
            files += found.sorted()
        }
        return files
    }

    /// The plugin folders `--explore` explores, sorted: each path given (a folder, or a name
    /// in `./plugins`), or every plugin in `./plugins`.
    func explorePlugins() throws -> [String] {
        let fm = FileManager.default
        func isPlugin(_ dir: String) -> Bool { fm.fileExists(atPath: PathText.join(dir, "init.lua")) }
        if options.paths.isEmpty {
            let names = (try? fm.contentsOfDirectory(atPath: "plugins")) ?? []
            return names.sorted().map { "plugins/\($0)" }.filter(isPlugin)
        }
        return try options.paths.map { path in
            let dir = path.hasSuffix("/") ? String(path.dropLast()) : path
            if isPlugin(dir) { return dir }
            if !dir.contains("/"), isPlugin("plugins/\(dir)") { return "plugins/\(dir)" }
            throw UsageError(
                description:
                    "\(path) is not a plugin (a folder with an init.lua, or a name in ./plugins); --explore takes plugins"
            )
        }
    }

    /// The spec `--explore` runs for `plugin` (a folder): one test exploring it with its own
    /// actions, invariants and services; an `mf.compose` that declares no actions is skipped
    /// with a line saying so.
    static func exploreSpec(_ plugin: String) -> String {
        let name = StateDiff.render(.string(LuaString(plugin)))
        return """
            local T = require "moonflow.test"
            describe("explore", function()
              it(\(name), function()
                T.explore(\(name), { skipUndeclared = true })
              end)
            end)
            """
    }

    /// Runs every spec file and prints the report: a line per test as it
    /// finishes, a line per file, then every failure, then `N passed, N failed`
    /// (with `--tap`: TAP 13, the counts in a closing `#` comment).
    /// - Returns: 0 when nothing failed, 1 when something failed or no spec was found, 2 for a usage error.
    package func run() -> Int32 {
        var files: [String]
        do {
            files = try specFiles()
            if let shard = options.shard { files = shard.files(of: files) }
        } catch {
            FileHandle.standardError.write(Data("moonflow test: \(LuaValue.visible("\(error)"))\n".utf8))
            return 2
        }
        guard !files.isEmpty else {
            if let shard = options.shard {
                // Not a failure: a small suite leaves some shards of a CI matrix empty.
                write("shard \(shard): no spec file falls in this shard")
                write("0 passed, 0 failed")
                return 0
            }
            let where_ =
                options.paths.isEmpty
                ? "plugins/*/spec/*_spec.lua under \(FileManager.default.currentDirectoryPath)"
                : "*_spec.lua in \(options.paths.joined(separator: ", "))"
            write("no specs found: looked for \(where_); `moonflow new NAME` makes a plugin with a spec")
            write("0 passed, 0 failed")
            return 1
        }
        if options.tap { write("TAP version 13") }
        // luacheck on the plugins under test, once for all their spec files; printed with the summary.
        let lint = PluginLint(sandboxed: options.profile == .sandboxed)
            .run(
                files.reduce(PluginLint.Files()) {
                    $0.adding(
                        options.exploring
                            ? PluginLint.files(ofPlugin: PathText.join($1, "init.lua")) : PluginLint.files(ofSpec: $1))
                })
        let output = SpecOutput(files: files.count, tap: options.tap, filtering: options.filter != nil, write: write)
        let coverage = options.coveragePath.map { _ in LineCoverage(plugins: coveredPlugins(files)) }
        let results = runAll(files, output: output, coverage: coverage)
        let all = results.flatMap { $0 }
        let passed = all.filter { $0.status == .success }.count
        let failed = all.filter(\.failed).count
        let skipped = all.filter { $0.status == .pending }.count
        var failedTotal = failed
        if let junit = options.junitPath {
            do { try JUnitReport(results: all).xml().write(toFile: junit, atomically: true, encoding: .utf8) } catch {
                FileHandle.standardError.write(
                    Data("moonflow test: cannot write --junit \(junit): \(error.localizedDescription)\n".utf8))
                failedTotal += 1
            }
        }
        if let coverage, let path = options.coveragePath {
            let covered = coverage.collect()
            for line in coverage.report(covered) { options.tap ? write("# " + line) : write(line) }
            do {
                try FileManager.default.createDirectory(
                    atPath: PathText.parent(of: path), withIntermediateDirectories: true)
                try LineCoverage.lcov(covered).write(toFile: path, atomically: true, encoding: .utf8)
                options.tap ? write("# wrote \(path)") : write("wrote \(path) (lcov)")
                for file in covered where !LineCoverage.lcovCanName(file.path) {
                    let line =
                        "left out of \(path): \(LuaValue.escaped(file.path)) (lcov's format cannot hold a control character in a name: rename the file)"
                    options.tap ? write("# " + line) : write(line)
                }
            } catch {
                FileHandle.standardError.write(
                    Data("moonflow test: cannot write \(path): \(error.localizedDescription)\n".utf8))
                failedTotal += 1
            }
        }
        let counts = "\(passed) passed, \(failedTotal) failed" + (skipped > 0 ? ", \(skipped) skipped" : "")
        if options.tap {
            writeLint(lint)
            write("1..\(all.count)")
            write("# " + counts)
        } else {
            for r in all where r.failed { writeFailure(r) }
            writeLint(lint)
            write(counts)
        }
        // A filter that selects nothing is a mistake (a typo, a renamed test), not a pass.
        if let filter = options.filter, all.isEmpty {
            write(
                "no test matched --filter \(StateDiff.render(.string(LuaString(filter)))) in \(files.count) spec file\(files.count == 1 ? "" : "s"); it matches a test's full name (describe names, then it), as plain text"
            )
            return 1
        }
        return failedTotal == 0 ? 0 : 1
    }

    /// Runs `files` on `options.jobs` threads (each file in its own Lua state);
    /// returns each file's results, in the order of `files`.
    /// The plugin folders whose files coverage counts: those explored, or those the spec files sit in.
    private func coveredPlugins(_ files: [String]) -> [String] {
        if options.exploring { return files }
        var found: [String] = []
        for file in files {
            if let plugin = SpecRunner.pluginFolder(ofSpec: file), !found.contains(plugin) { found.append(plugin) }
        }
        return found
    }

    private func runAll(_ files: [String], output: SpecOutput, coverage: LineCoverage? = nil) -> [[Result]] {
        let jobs = max(1, min(options.jobs ?? ProcessInfo.processInfo.activeProcessorCount, files.count))
        let collected = Locked([[Result]](repeating: [], count: files.count))
        let next = Locked(0)
        let work: @Sendable () -> Void = {
            while true {
                let index: Int = next.withLock { n in
                    defer { n += 1 }; return n
                }
                guard index < files.count else { return }
                let started = Date()
                let results = runFile(files[index], coverage: coverage) { output.add($0, file: index) }
                collected.withLock { $0[index] = results }
                output.add(.fileDone(files[index], results, seconds: Date().timeIntervalSince(started)), file: index)
            }
        }
        if jobs == 1 {
            work()
        } else {
            let group = DispatchGroup()
            for _ in 0..<jobs {
                group.enter()
                // A thread of its own with a large stack: a Lua state may run deep (as on the main thread).
                let thread = Thread {
                    work(); group.leave()
                }
                thread.stackSize = 8 << 20
                thread.start()
            }
            group.wait()
        }
        return collected.withLock { $0 }
    }

    // MARK: - One file

    /// Runs one spec file in a fresh Lua state; `report` gets each result as its test ends.
    ///
    /// A test stuck in code no time limit reaches (a blocking C or Swift function: the
    /// watchdog's last resort, `FeatureHost.isStuck`) fails, its Lua state is left behind,
    /// and the tests after it run in a fresh state.
    package func runFile(
        _ file: String, coverage: LineCoverage? = nil, report: @escaping @Sendable (SpecEvent) -> Void = { _ in }
    ) -> [Result] {
        let reported = Locked([Result]())
        let travel = options.travel
        // Under the debugger, what a re-run repeats is not reported again (`SpecTravel`).
        let keep: @Sendable (Result) -> Void = { r in
            guard travel?.reports() != false else { return }
            reported.withLock { $0.append(r) }; report(.result(r))
        }
        let shown: @Sendable (SpecEvent) -> Void = { event in
            if case .printed = event, travel?.reports() == false { return }
            report(event)
        }
        // The debugger went back: the file runs again from its start.
        travel?.startFile()
        repeat {
            travel?.begin()
            runStuckPast(file, coverage: coverage, keep: keep, report: shown)
        } while travel?.pending == true
        return reported.withLock { $0 }
    }

    /// Runs `file`, and past each test stuck in code no time limit reaches, in a fresh state.
    private func runStuckPast(
        _ file: String, coverage: LineCoverage?, keep: @escaping @Sendable (Result) -> Void,
        report: @escaping @Sendable (SpecEvent) -> Void
    ) {
        var skip = 0
        while let stuck = runOnce(file, skipping: skip, coverage: coverage, keep: keep, report: report) {
            let limit = options.timeLimitMs.map { "\($0) ms" } ?? "its limit"
            let goesOn = stuck.ordinal != nil && !stuck.capped
            let message =
                "stuck in a call that ran on past the time limit (\(limit)) in code that cannot be interrupted "
                + "(a blocking C or Swift function, such as os.execute or a service that never returns); its Lua state "
                + "was left behind" + (goesOn ? ", and the tests after it run in a fresh one" : "")
                + (stuck.capped
                    ? ", and \(AbandonedStates.shared.limit) Lua states stuck so are left behind now, the most a run keeps "
                        + "(each holds its memory until its call returns): the tests after it in this file do not run"
                    : "")
            keep(
                Result(
                    file: file, describePath: stuck.path, name: stuck.name, status: .error,
                    message: message, location: stuck.location ?? file, seconds: stuck.seconds))
            guard let ordinal = stuck.ordinal, !stuck.capped else { break }  // outside a test: the file cannot go on
            skip = ordinal
        }
    }

    /// The test a stuck state was running (nil ordinal: none, the file's own code).
    private struct StuckTest {
        var ordinal: Int?
        var name: String
        var path: [String]
        var seconds: Double
        var location: String?
        /// Leaving its state behind reached `AbandonedStates`' cap: no fresh state is made.
        var capped = false
    }

    /// Runs `file`'s tests after the first `skip` in a fresh Lua state, on a thread of
    /// its own; returns the test that got stuck, or nil when the file ran to its end.
    private func runOnce(
        _ file: String, skipping skip: Int, coverage: LineCoverage?, keep: @escaping @Sendable (Result) -> Void,
        report: @escaping @Sendable (SpecEvent) -> Void
    ) -> StuckTest? {
        // Once the state is left behind, whatever it reports later is not this run's.
        let abandoned = Locked(false)
        let current = Locked(StuckTest(ordinal: nil, name: "(loading \(file))", path: [], seconds: 0, location: nil))
        let started = Locked(Date())
        let host: FeatureHost
        let driver: LuaRef
        var arguments: [LuaPush]
        // A spec's print, io.write and io.stdout go with its file's output (kept together under
        // --jobs); under TAP, which owns standard output, to standard error as TAP comments.
        let tap = options.tap
        let printed: @Sendable ([String]) -> Void = { lines in
            guard !abandoned.withLock({ $0 }), options.travel?.pending != true else { return }
            for text in lines {
                if tap {
                    FileHandle.standardError.write(Data(("# " + text + "\n").utf8))
                } else {
                    report(.printed(text))
                }
            }
        }
        let stdout = SpecStdout()
        do {
            host = try FeatureHost(
                configuration: .init(
                    searchPaths: options.exploring
                        ? [PathText.parent(of: file), "plugins"] : SpecRunner.searchPaths(for: file), profile: .trusted,
                    timeLimitMs: options.timeLimitMs, memoryLimitMB: options.memoryLimitMB, clock: .virtual,
                    // No file store: declared SQLite repositories are fresh in-memory ones, so specs start from the seed.
                    isolatesPlugins: options.profile == .sandboxed), switchableClock: true)
            host.bridge.locationRoots = []  // the tool names files as it found them
            if coverage != nil { host.lua.startCoverage() }
            options.prepareHost?(host)
            var explore = options.explore
            explore.decisions = options.travel?.decisions
            try TestModule.install(in: host, explore: explore)
            // os.exit is an error: the runner owns the process.
            try HostOwnedProcess.install(in: host.lua, command: "test") { text, _ in
                printed(stdout?.take(printed: text) ?? [text])
            }
            try host.lua.setGlobal("arg", .value(.table(SpecRunner.argTable(options.arg))))
            driver = try host.lua.load(string: SpecRunner.driverSource, name: "moonflow.spec")
            let arm: LuaPush =
                options.testTimeLimitMs.map { _ in (try? host.lua.testDeadline()).map(LuaPush.ref) ?? .value(.nil) }
                ?? .value(.nil)
            let onResult: LuaPush = .function { args in
                guard !abandoned.withLock({ $0 }), options.travel?.pending != true else { return [] }
                let row = try args.value(1, path: "result")
                if case .integer(let ordinal) = row["started"] ?? .nil {
                    let path = (row["path"]?.tableValue?.array ?? []).map { $0.stringValue ?? $0.description }
                    current.withLock {
                        $0 = StuckTest(
                            ordinal: Int(ordinal), name: row["name"]?.stringValue ?? "", path: path, seconds: 0,
                            location: row["where"]?.stringValue)
                    }
                    started.withLock { $0 = Date() }
                } else {
                    if let stdout { printed(stdout.take(endingLine: true)) }
                    keep(SpecRunner.result(row, file: file))
                }
                return []
            }
            arguments = [
                .value(.string(LuaString(file))), .value(options.filter.map { .string(LuaString($0)) } ?? .nil),
                onResult, arm, .value(options.testTimeLimitMs.map { .integer($0) } ?? .nil),
                .value(.integer(Int64(skip))),
                .value(options.exploring ? .string(LuaString(SpecRunner.exploreSpec(file))) : .nil),
                .value(stdout.map { .string(LuaString($0.path)) } ?? .nil),
            ]
        } catch {
            stdout?.unlinkPath()
            fail(file, error, keep: keep)
            return nil
        }
        let call = DriverCall(value: (host, driver, arguments))
        let ended = StuckWatch.run(isStuck: { host.isStuck }) {
            let (host, driver, arguments) = call.value
            do { try host.lua.callWithoutTimeLimit(driver, arguments) { _ in } } catch {
                // What the spec wrote comes before the error that ended its file.
                if let stdout { printed(stdout.take(endingLine: true)) }
                if !abandoned.withLock({ $0 }), options.travel?.pending != true { fail(file, error, keep: keep) }
            }
            if let stdout { printed(stdout.take(endingLine: true)) }
            coverage?.add(host.lua.coveredLines())
        }
        if !ended {
            abandoned.withLock { $0 = true }
            // Kept until its call returns: freeing the state would touch it under that call.
            let stuckLua = host.lua
            let room = AbandonedStates.shared.keep([host], while: { stuckLua.isInCall })
            var stuck = current.withLock { $0 }
            stuck.capped = !room
            stuck.seconds = Date().timeIntervalSince(started.withLock { $0 })
            return stuck
        }
        return nil
    }

    /// The global `arg` of a spec: `words` from index 0, or this process's, as busted's runner
    /// has it (`arg[0]` the runner, here the `moonflow` binary; then the words after `test`).
    static func argTable(_ words: [String]?) -> LuaTable {
        var table = LuaTable()
        for (i, word) in (words ?? processArg).enumerated() { table[.integer(Int64(i))] = .string(LuaString(word)) }
        return table
    }

    /// The `moonflow` binary's path (symbolic links followed), then the
    /// words after `moonflow test` (none when this process is not `moonflow test`).
    private static let processArg: [String] = {
        let words = CommandLine.arguments
        let proc = URL(fileURLWithPath: "/proc/self/exe")
        let own =
            FileManager.default.fileExists(atPath: proc.path)
            ? proc.resolvingSymlinksInPath().path
            : URL(fileURLWithPath: words.first ?? "moonflow").resolvingSymlinksInPath().path
        return [own] + (words.count > 1 && words[1] == "test" ? Array(words[2...]) : [])
    }()

    /// The driver's call, handed to the thread that makes it (and only it uses it).
    private struct DriverCall: @unchecked Sendable { let value: (FeatureHost, LuaRef, [LuaPush]) }

    /// An error outside any test (the file does not load, the host cannot be made) as a result.
    private func fail(_ file: String, _ error: any Error, keep: (Result) -> Void) {
        let (message, location) = LuaErrorReport.describe(error, fallback: file)
        keep(
            Result(
                file: file, describePath: [], name: "(loading \(file))", status: .error,
                message: FlagHints.add(to: message), location: location, seconds: 0))
    }

    /// `plugins/NAME/spec/x_spec.lua` finds plugins by name in `plugins/` (the folder that holds NAME), then in `./plugins`.
    static func searchPaths(for file: String) -> [String] {
        guard let pluginDir = pluginFolder(ofSpec: file) else { return ["plugins"] }
        return [PathText.parent(of: pluginDir), "plugins"]
    }

    /// The plugin folder a spec file sits in: `plugins/NAME` for `plugins/NAME/spec/x_spec.lua`
    /// when `plugins/NAME/init.lua` exists; nil for a spec anywhere else.
    static func pluginFolder(ofSpec file: String) -> String? {
        let specDir = PathText.parent(of: file)
        let pluginDir = PathText.parent(of: specDir)
        guard PathText.name(of: specDir) == "spec",
            FileManager.default.fileExists(atPath: PathText.join(pluginDir, "init.lua"))
        else { return nil }
        return pluginDir
    }

    private static func result(_ row: LuaValue, file: String) -> Result {
        let path = row["path"]?.tableValue?.array.compactMap(\.stringValue) ?? []
        return Result(
            file: file, describePath: path, name: row["name"]?.stringValue ?? "?",
            status: Result.Status(rawValue: row["status"]?.stringValue ?? "error") ?? .error,
            message: row["message"]?.stringValue.map(FlagHints.add(to:)), location: row["where"]?.stringValue,
            seconds: row["duration"]?.doubleValue ?? 0)
    }

    // MARK: - Reports

    /// luacheck's findings on the plugins under test (they fail no test), or why it did not run;
    /// under TAP as `#` comments.
    private func writeLint(_ lint: PluginLint.Outcome) {
        var lines: [String]
        switch lint {
        case .unavailable(let why): lines = ["moonflow test: \(why)"]
        case .checked(let findings): lines = findings.map(\.text)
        }
        guard !lines.isEmpty else { return }
        if options.tap { lines.map { "# " + $0 }.forEach(write) } else { ([""] + lines).forEach(write) }
    }

    private func writeFailure(_ r: Result) {
        SpecRunner.failureLines(r).forEach(write)
    }

    static func failureLines(_ r: Result) -> [String] {
        var lines: [String] = []
        let write = { lines.append($0) }
        write("")
        write("\(r.status == .error ? "ERROR" : "FAIL") \(LuaValue.escaped(r.fullName))")
        let message = r.message ?? "(no message)"
        for line in message.split(separator: "\n", omittingEmptySubsequences: false) {
            write("  \(LuaValue.visible(String(line)))")
        }
        if let location = r.location, !message.hasPrefix(location) { write("  at \(LuaValue.escaped(location))") }
        return lines
    }

}

/// JUnit XML for CI: a `testsuite` per spec file (`file` its path), a `testcase` per `it`
/// (`classname` the describe path), `failure`/`error` with the message, `skipped` for pending.
///
/// It keeps to the Jenkins xunit plugin's JUnit schema (junit-10.xsd), the strictest reader:
/// `<testsuites>` carries no `skipped` (each `<testsuite>` does), `<testcase>` no `file`,
/// every `time` is seconds with three decimals. Names and messages come back from any XML
/// reader as the spec wrote them: a newline, tab or carriage return in an attribute is a
/// character reference (a raw one would be read as a space), a carriage return in text too
/// (a raw one would be read as a newline), and a character XML 1.0 cannot hold even as a
/// reference (other control characters, U+FFFE, U+FFFF) is written as Lua would write it, `\x07`.
struct JUnitReport {
    let results: [SpecRunner.Result]

    func xml() -> String {
        var out = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        let files = results.map(\.file).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        out += "<testsuites name=\"moonflow\" \(counts(results))>\n"
        for file in files {
            let rs = results.filter { $0.file == file }
            let skipped = rs.filter { $0.status == .pending }.count
            out +=
                "  <testsuite name=\"\(Self.escape(file))\" file=\"\(Self.escape(file))\" \(counts(rs)) skipped=\"\(skipped)\">\n"
            for r in rs {
                let classname = r.describePath.isEmpty ? file : r.describePath.joined(separator: " ")
                out +=
                    "    <testcase classname=\"\(Self.escape(classname))\" name=\"\(Self.escape(r.name))\" time=\"\(Self.seconds(r.seconds))\""
                switch r.status {
                case .success: out += "/>\n"
                case .pending: out += ">\n      <skipped/>\n    </testcase>\n"
                case .failure, .error:
                    let tag = r.status == .error ? "error" : "failure"
                    let message = r.message ?? ""
                    out +=
                        ">\n      <\(tag) message=\"\(Self.escape(Self.firstLine(message)))\" type=\"\(tag)\">"
                        + "\(Self.escape(message, inAttribute: false))</\(tag)>\n    </testcase>\n"
                }
            }
            out += "  </testsuite>\n"
        }
        return out + "</testsuites>\n"
    }

    /// The counts both `<testsuites>` and `<testsuite>` carry, and their time.
    private func counts(_ rs: [SpecRunner.Result]) -> String {
        let time = rs.reduce(0) { $0 + $1.seconds }
        return "tests=\"\(rs.count)\" failures=\"\(rs.filter { $0.status == .failure }.count)\" "
            + "errors=\"\(rs.filter { $0.status == .error }.count)\" time=\"\(Self.seconds(time))\""
    }

    /// Seconds with three decimals, never negative, NaN or infinite (the schema's time is digits).
    static func seconds(_ value: Double) -> String {
        String(format: "%.3f", value.isFinite ? max(0, value) : 0)
    }

    /// Up to the first line break, a carriage return included (a Swift `Character` holds
    /// `\r\n` as one, which a split at `\n` would not see).
    static func firstLine(_ s: String) -> String {
        let scalars = s.unicodeScalars
        return String(scalars[..<(scalars.firstIndex { $0 == "\n" || $0 == "\r" } ?? scalars.endIndex)])
    }

    static func escape(_ s: String, inAttribute: Bool = true) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"" where inAttribute: out += "&quot;"
            case "'" where inAttribute: out += "&apos;"
            // Readers normalise these: in an attribute each to a space, a carriage return
            // in text to a newline. A reference keeps them.
            case "\n" where inAttribute: out += "&#10;"
            case "\t" where inAttribute: out += "&#9;"
            case "\r": out += "&#13;"
            case "\n", "\t": out.unicodeScalars.append(c)
            default:
                // XML 1.0 allows no other control character, nor U+FFFE and U+FFFF, even as a reference.
                if c.value < 0x20 {
                    out += "\\x" + (c.value < 0x10 ? "0" : "") + String(c.value, radix: 16, uppercase: true)
                } else if c.value == 0xFFFE || c.value == 0xFFFF {
                    out += "\\u{" + String(c.value, radix: 16, uppercase: true) + "}"
                } else {
                    out.unicodeScalars.append(c)
                }
            }
        }
        return out
    }
}

extension SpecRunner {
    /// Runs busted's core on one spec file and hands `report` a row per test as
    /// it ends: `{ name, path = { describe names }, status, message, where, duration }`.
    /// With `arm` (LuaState.testDeadline) each `it` runs under `testLimit` ms.
    static let driverSource = String(decoding: PackageResources.spec_driver_lua, as: UTF8.self)
}

/// Going back in a spec file under `moonflow test --debug`: the debugger abandons the spec's
/// Lua state (`DebugController.repeats(by:)` calls `request()` on the stopped thread) and the
/// runner runs the file again from its start, on the virtual clock as every spec runs; what
/// the re-run reports up to what the file had reported (results, printed lines) is not
/// reported again, and what its explorations took from the wall clock or chance is taken
/// again as it was (`decisions`).
package final class SpecTravel: @unchecked Sendable {
    private let lock = NSLock()
    private var wanted = false
    private var given = 0
    private var shown = 0
    /// What the file's explorations read from the wall clock and chance, in order.
    let decisions = ExploreDecisions()

    package init() {}

    /// A spec file starts: nothing of it has been reported, and nothing decided.
    func startFile() {
        lock.withLock {
            wanted = false
            given = 0
            shown = 0
        }
        decisions.forget()
    }

    /// The debugger goes back: the file runs again once its state has unwound.
    package func request() {
        lock.withLock {
            wanted = true
            shown = max(shown, given)
        }
    }

    var pending: Bool { lock.withLock { wanted } }

    /// A run of the file starts (again).
    func begin() {
        lock.withLock {
            wanted = false
            given = 0
        }
        decisions.rewind()
    }

    /// Whether the next result or printed line is reported: not one a run before reported.
    func reports() -> Bool {
        lock.withLock {
            given += 1
            return given > shown
        }
    }
}
