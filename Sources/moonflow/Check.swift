import ArgumentParser
import Foundation
import MoonflowTool

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract:
            "Load and validate a plugin without running it, and lint its files (exit 0 when it is fine, 1 otherwise).",
        discussion: """
            Problems (syntax, the definition, its interactors) fail the check. luacheck's warnings \
            (undefined globals, unused variables and arguments, shadowing, unreachable code) are \
            printed as file:line:col: warning: ... and fail it only under --strict.
            """
    )

    @Argument(help: "A plugin folder or a .lua file.")
    var path: String

    @Flag(name: .long, help: "Fail on luacheck's warnings too (and when luacheck is not installed).")
    var strict = false

    @OptionGroup var limits: LimitOptions

    func validate() throws { try validatePluginPath(path) }

    func run() throws {
        var check = PluginCheck(path: path)
        check.profile = limits.sandbox ? .sandboxed : .trusted
        check.timeLimitMs = limits.timeLimit ?? LimitOptions.defaultTimeLimitMs
        check.memoryLimitMB = limits.memoryLimit ?? LimitOptions.defaultMemoryLimitMB
        let report = check.report()
        let stderr = { (line: String) in FileHandle.standardError.write(Data("\(line)\n".utf8)) }
        (report.problems + report.warnings).forEach(stderr)
        if let note = report.lintNote { stderr("moonflow check: \(note)") }
        let warnings = report.warnings.count == 1 ? "1 warning" : "\(report.warnings.count) warnings"
        if report.fails(strict: strict) {
            if report.problems.isEmpty {
                stderr(
                    "\(path): failed under --strict: " + (report.warnings.isEmpty ? "luacheck did not run" : warnings))
            }
            throw ExitCode(1)
        }
        print("\(path): ok" + (report.warnings.isEmpty ? "" : " (\(warnings))"))
    }
}
