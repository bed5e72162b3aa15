import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import MoonflowRun

/// luacheck (Debian's `lua-check`) on every Lua file of a plugin, for `moonflow check` and
/// `moonflow test`: undefined globals, unused variables and arguments, shadowing, unreachable
/// code, each at `file:line:col`.
///
///     let lint = PluginLint(sandboxed: false)
///     switch lint.run(PluginLint.files(ofPlugin: "plugins/counter/init.lua")) {
///     case .checked(let findings): findings.forEach { print($0.text) }
///     case .unavailable(let why): print(why)
///     }
///
/// luacheck runs as a program of its own, with a configuration written from the real globals
/// tables of a host made as the command makes its own (`Plugins/lint_config.lua`): a plugin's
/// files are checked against the globals a plugin has (its own under `--sandbox`), spec files
/// against the spec state's globals and busted's. Formatting (line length, whitespace) is not
/// reported.
package struct PluginLint: Sendable {
    /// One report of luacheck's: a warning, or an error (a file it cannot parse).
    package struct Finding: Sendable, Hashable, Comparable {
        package let file: String
        package let line: Int
        package let column: Int
        /// luacheck's code: `W113` (an undefined global), `W211` (an unused variable)...;
        /// `E011` and other `E` codes are errors.
        package let code: String
        package let message: String

        package var isError: Bool { code.hasPrefix("E") }

        /// As `check` prints it: `plugins/x/init.lua:3:9: warning: unused variable 'n' (W211)`;
        /// an error has no label, as `check`'s other problems. A control character in the
        /// file's name or the message is escaped (`\027`): the plugin chose them.
        package var text: String {
            "\(LuaValue.escaped(file)):\(line):\(column): \(isError ? "" : "warning: ")\(LuaValue.escaped(message)) (\(code))"
        }

        package static func < (a: Finding, b: Finding) -> Bool {
            (a.file, a.line, a.column, a.code, a.message) < (b.file, b.line, b.column, b.code, b.message)
        }
    }

    /// What came of running luacheck.
    package enum Outcome: Sendable {
        case checked([Finding])
        /// luacheck did not run (it is not installed, or it failed): why, and what to do.
        case unavailable(String)
    }

    /// A plugin's Lua files, by the globals they run with.
    package struct Files: Sendable, Equatable {
        /// The plugin's own code: `init.lua` and its modules.
        package var plugin: [String] = []
        /// Spec files (`*_spec.lua`) and whatever else is in the plugin's `spec/` folder.
        package var spec: [String] = []

        package init(plugin: [String] = [], spec: [String] = []) {
            self.plugin = plugin
            self.spec = spec
        }

        package var isEmpty: Bool { plugin.isEmpty && spec.isEmpty }

        /// Both sets of files, each file once.
        package func adding(_ other: Files) -> Files {
            Files(
                plugin: plugin + other.plugin.filter { !plugin.contains($0) },
                spec: spec + other.spec.filter { !spec.contains($0) })
        }
    }

    /// Whether plugins run with the sandbox's globals of their own (`--sandbox`).
    package var sandboxed: Bool

    package init(sandboxed: Bool) { self.sandboxed = sandboxed }

    // MARK: - Which files

    /// The files of the plugin whose file `resolved` is: a plugin folder's `init.lua` stands for
    /// every `.lua` file under that folder; any other file for itself alone.
    package static func files(ofPlugin resolved: String) -> Files {
        guard PathText.normalized(resolved).split(separator: "/").last == "init.lua" else {
            return SpecFiles.isSpec(resolved, in: nil) ? Files(spec: [resolved]) : Files(plugin: [resolved])
        }
        let folder = PathText.parent(of: resolved)
        let found = FolderWalk.paths(under: folder).filter { $0.hasSuffix(".lua") }
            .map { PathText.join(folder, $0) }
        var files = Files()
        for file in found {
            if SpecFiles.isSpec(file, in: folder) { files.spec.append(file) } else { files.plugin.append(file) }
        }
        return files
    }

    /// The files a spec file tests: its plugin's (`plugins/NAME/spec/x_spec.lua` tests the
    /// plugin in `plugins/NAME`); a spec file anywhere else is checked alone.
    package static func files(ofSpec spec: String) -> Files {
        guard let plugin = SpecRunner.pluginFolder(ofSpec: spec) else { return Files(spec: [spec]) }
        return files(ofPlugin: PathText.join(plugin, "init.lua"))
    }

    // MARK: - Running luacheck

    /// What `check` and `test` say when there is no luacheck to run.
    static let notInstalled =
        "luacheck is not installed, so undefined globals, unused variables, shadowing and unreachable code "
        + "were not checked; install Debian's lua-check (scripts/setup installs it)"

    /// Runs luacheck on `files`; `.checked` with every finding, sorted by file, line and column.
    package func run(_ files: Files) -> Outcome {
        guard !files.isEmpty else { return .checked([]) }
        guard let luacheck = PluginLint.executable() else { return .unavailable(PluginLint.notInstalled) }
        let config = FileManager.default.temporaryDirectory.appendingPathComponent(
            "moonflow-luacheck-\(UUID().uuidString).lua")
        defer { try? FileManager.default.removeItem(at: config) }
        do {
            try configuration(for: files.plugin.first ?? files.spec[0]).write(
                to: config, atomically: true, encoding: .utf8)
        } catch {
            return .unavailable("the globals for luacheck could not be read: \(error)")
        }
        let common = ["--config", config.path, "--no-cache", "--no-color", "--formatter", "plain", "--codes"]
        var findings: [Finding] = []
        for (group, std) in [(files.plugin, nil), (files.spec, "moonflow_spec+busted")] where !group.isEmpty {
            let arguments = common + (std.map { ["--std", $0] } ?? []) + ["--"] + group
            switch PluginLint.launch(luacheck, arguments) {
            case .failure(let error):
                return .unavailable("luacheck (\(luacheck)) could not run: \(error.localizedDescription)")
            case .success(let (status, output)):
                let lines = output.split(separator: "\n").map(String.init)
                let parsed = lines.compactMap(PluginLint.finding)
                // 0: clean, 1: warnings, 2: errors (a file that does not parse); more: luacheck itself failed.
                guard status <= 2, parsed.count == lines.count else {
                    return .unavailable(
                        "luacheck failed (exit status \(status)): \(LuaValue.visible(output.trimmingWhitespace()))")
                }
                findings += parsed
            }
        }
        return .checked(findings.sorted())
    }

    /// The configuration luacheck gets: the globals tables of a host made as the command makes
    /// its own (`Plugins/lint_config.lua` lists them).
    func configuration(for pluginFile: String) throws -> String {
        let host = try FeatureHost(
            configuration: .init(
                searchPaths: [], profile: .trusted, timeLimitMs: 1000,
                memoryLimitMB: 64, clock: .virtual, isolatesPlugins: sandboxed))
        let pluginGlobals = try host.pluginGlobals(forFile: pluginFile)
        return try host.perform {
            let chunk = try host.lua.load(string: PluginLint.configSource, name: "moonflow lint_config")
            let specGlobals = try host.lua.ref(global: "_G")
            return try host.lua.call(chunk, [.ref(pluginGlobals), .ref(specGlobals)]) {
                try $0.string(1, function: "lint_config")
            }
        }
    }

    static let configSource = String(decoding: PackageResources.lint_config_lua, as: UTF8.self)

    /// `plugins/x/init.lua:3:9: (W211) unused variable 'n'`, as luacheck's plain formatter
    /// writes it with `--codes`; nil for any other line.
    static func finding(_ line: String) -> Finding? {
        guard let match = line.wholeMatch(of: /(.+):(\d+):(\d+): \(([EW]\d+)\) (.*)/),
            let number = Int(match.2), let column = Int(match.3)
        else { return nil }
        return Finding(
            file: String(match.1), line: number, column: column, code: String(match.4), message: String(match.5))
    }

    /// `luacheck` on PATH.
    static func executable(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        let folders = (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":")
        return folders.map { "\($0)/luacheck" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs `executable` with its standard output and error together; its exit status and what it wrote.
    private static func launch(_ executable: String, _ arguments: [String]) -> Result<(Int32, String), any Error> {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return .failure(error) }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return .success((process.terminationStatus, String(decoding: data, as: UTF8.self)))
    }
}
