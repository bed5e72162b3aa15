import Foundation
import LuaKit
import MoonflowHost
import MoonflowRun
import Streams

/// `moonflow test --coverage`: the lines of the plugins' own Lua files that specs and
/// explorations ran (counted per Lua state by a line hook in C, `LuaState.startCoverage`),
/// against the lines that can run (each function's active lines, read from the file's
/// bytecode), printed as a table per file and written as lcov's tracefile.
///
///     let coverage = LineCoverage(plugins: ["plugins/counter"])
///     coverage.add(host.lua.coveredLines())          // per spec file's state
///     coverage.report().forEach { print($0) }
///     try coverage.writeLcov(to: "coverage/lcov.info")
package final class LineCoverage: @unchecked Sendable {
    /// The plugin folders whose files count (not their `spec/`).
    let plugins: [String]
    private let counts = Locked([String: [Int: Int]]())

    package init(plugins: [String]) {
        self.plugins = plugins.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }.sorted()
    }

    /// Adds one state's counts (chunk name: line: count).
    package func add(_ lines: [String: [Int: Int]]) {
        counts.withLock { all in
            for (name, hits) in lines where counts(name) { all[name, default: [:]].merge(hits, uniquingKeysWith: +) }
        }
    }

    /// Whether a chunk named `name` is a plugin's own file (not a spec, not Moonflow's own Lua).
    private func counts(_ name: String) -> Bool {
        name.hasSuffix(".lua") && !name.contains("/spec/") && plugins.contains { name.hasPrefix($0 + "/") }
    }

    /// Every `.lua` file of the plugins (outside `spec/`), sorted: files no spec loaded count too.
    func files() -> [String] {
        var all = Set(counts.withLock { Array($0.keys) })
        for plugin in plugins {
            for path in FolderWalk.paths(under: plugin)
            where path.hasSuffix(".lua") && !path.hasPrefix("spec/") && !path.contains("/spec/") {
                all.insert(PathText.join(plugin, path))
            }
        }
        return all.sorted()
    }

    /// One file's lines: each line that can run, with its count (0: never ran); and its
    /// functions, each with where it is defined and how often it ran.
    package struct File {
        package let path: String
        package let lines: [(line: Int, hits: Int)]
        package var functions: [(line: Int, name: String, hits: Int)] = []
        package var found: Int { lines.count }
        package var hit: Int { lines.filter { $0.hits > 0 }.count }
    }

    package func collect() -> [File] {
        let all = counts.withLock { $0 }
        return files().map { path in
            let hits = all[path] ?? [:]
            var executable = ActiveLines.of(file: path)
            // A function's closing `end` runs only when it falls off its end: counted if it did.
            executable.lines.formUnion(executable.closingOnly.filter { hits[$0] != nil })
            executable.lines.formUnion(hits.keys)
            let names = Self.functionNames(executable.functions, in: path)
            return File(
                path: path, lines: executable.lines.sorted().map { ($0, hits[$0] ?? 0) },
                functions: zip(executable.functions, names).map { ($0.line, $1, hits[$0.first] ?? 0) })
        }
    }

    /// A name for each function, as its line in the source names it (`function M.load(`,
    /// `local function check(`, `reduce = function(`); `function` for one with none. A name
    /// given again in the file gets its line after it (`function (line 12)`): lcov keys
    /// functions by name.
    static func functionNames(_ functions: [ActiveLines.Function], in path: String) -> [String] {
        let source = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        let lines = source.split(separator: "\n", omittingEmptySubsequences: false)
        var used = Set<String>()
        var named = Set<Int>()
        return functions.map { f in
            var name = "function"
            // The first function of a line takes the name the line gives.
            if f.line <= lines.count, named.insert(f.line).inserted, let found = declaredName(String(lines[f.line - 1]))
            {
                name = found
            }
            if !used.insert(name).inserted { name += " (line \(f.line))" }
            used.insert(name)
            return name
        }
    }

    /// The name a line gives the function it defines: `M.load` of `function M.load(`, `check`
    /// of `local function check(`, `reduce` of `reduce = function(`.
    static func declaredName(_ line: String) -> String? {
        if let m = line.firstMatch(of: #/function\s+([A-Za-z_][A-Za-z0-9_.:]*)\s*\(/#) { return String(m.1) }
        if let m = line.firstMatch(of: #/([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*function\s*\(/#) { return String(m.1) }
        return nil
    }

    /// The table `moonflow test` prints: a line per file and the total.
    package func report(_ files: [File]) -> [String] {
        guard !files.isEmpty else {
            return [
                "coverage: no plugin Lua file under \(plugins.map { LuaValue.escaped($0) }.joined(separator: ", "))"
            ]
        }
        // A name's control characters escaped (`\027`): the plugin chose its files' names.
        let names = files.map { LuaValue.escaped($0.path) }
        let width = max(names.map(\.count).max() ?? 0, 5)
        func row(_ name: String, _ hit: Int, _ found: Int) -> String {
            let percent = found == 0 ? 100 : Double(hit) * 100 / Double(found)
            return "  " + name.padding(toLength: width, withPad: " ", startingAt: 0)
                + "  " + String(format: "%5d/%-5d %6.1f%%", hit, found, percent)
        }
        var lines = ["", "coverage: lines of the plugins' Lua run by the specs and explorations"]
        lines += zip(names, files).map { row($0, $1.hit, $1.found) }
        lines.append(row("total", files.reduce(0) { $0 + $1.hit }, files.reduce(0) { $0 + $1.found }))
        return lines
    }

    /// lcov's tracefile: a record per file (`SF:`), `FN:line,name` per function and
    /// `FNDA:count,name` how often it ran (its first line's count), `FNF:`/`FNH:` the functions
    /// found and hit, `DA:line,count` per line that can run, `LF:`/`LH:` the lines found and
    /// hit. A file `lcovCanName` refuses has no record.
    package static func lcov(_ files: [File]) -> String {
        var out = ""
        for file in files where lcovCanName(file.path) {
            out += "TN:\nSF:\(file.path)\n"
            for f in file.functions { out += "FN:\(f.line),\(f.name)\n" }
            for f in file.functions { out += "FNDA:\(f.hits),\(f.name)\n" }
            out += "FNF:\(file.functions.count)\nFNH:\(file.functions.filter { $0.hits > 0 }.count)\n"
            for (line, hits) in file.lines { out += "DA:\(line),\(hits)\n" }
            out += "LF:\(file.found)\nLH:\(file.hit)\nend_of_record\n"
        }
        return out
    }

    /// Whether lcov's tracefile can hold `path`. Its format has no quoting: a line break in a
    /// name ends the `SF:` line, and what follows reads as records of the name's own (an
    /// `SF:.env` that genhtml then publishes); genhtml also prints each name on the terminal.
    /// So a name with any control character is refused.
    package static func lcovCanName(_ path: String) -> Bool {
        !path.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }
}
