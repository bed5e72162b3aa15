import CEditShim
import Foundation
import MoonflowHost
import MoonflowRun
import MoonflowTool

/// The prompt of `moonflow run` at a terminal, on libedit: line editing, a history
/// kept across runs (`~/.moonflow_history`, or `MOONFLOW_HISTORY`), and Tab
/// completion of the action names and, after one, its fields. libedit is loaded when
/// the prompt opens, not linked; without it (no libedit.so.2) the prompt reads plain
/// lines, with a note on standard error saying what is missing.
///
///     let prompt = EditLinePrompt()
///     let input = InputSource(prompt: prompt)
///     defer { prompt.close() }
///
/// **Threading:** libedit's state is global: one prompt per process, read from one thread.
/// `printAbove` may be called from any: the reading thread prints the line (see CEditShim).
final class EditLinePrompt: LineReader {
    /// Lines of history kept.
    static let historyLimit: Int32 = 1000

    /// Where history is kept: `MOONFLOW_HISTORY`, else `~/.moonflow_history`; nil without a home.
    static var historyPath: String? {
        let environment = ProcessInfo.processInfo.environment
        if let explicit = environment["MOONFLOW_HISTORY"], !explicit.isEmpty { return explicit }
        guard let home = environment["HOME"], !home.isEmpty else { return nil }
        return (home as NSString).appendingPathComponent(".moonflow_history")
    }

    /// Whether libedit was loaded: else lines are read plainly (no editing, history or completion).
    let editing: Bool

    init(historyPath: String? = EditLinePrompt.historyPath) {
        editing = mfe_open("moonflow", historyPath, Self.historyLimit) == 0
        if !editing {
            let reason = mfe_load_error().map { String(cString: $0) } ?? "libedit could not be loaded"
            FileHandle.standardError.write(
                Data(
                    "moonflow: the prompt has no line editing, history or Tab completion: \(reason) (install libedit: apt install libedit2)\n"
                        .utf8))
        }
    }

    func readLine(prompt: String) -> String? {
        guard editing else { return Self.readPlainLine(prompt: prompt) }
        let length = mfe_readline(prompt)
        guard length >= 0 else {
            // Ctrl-D at the prompt: end its line, so the shell's prompt starts on a line of its own.
            FileHandle.standardOutput.write(Data("\n".utf8))
            return nil
        }
        var buffer = [CChar](repeating: 0, count: Int(length) + 1)
        mfe_take_line(&buffer, buffer.count)
        return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Without libedit: the prompt, then a line as the terminal's own line discipline edits it.
    private static func readPlainLine(prompt: String) -> String? {
        FileHandle.standardOutput.write(Data(prompt.utf8))
        guard let line = Swift.readLine(strippingNewline: true) else {
            FileHandle.standardOutput.write(Data("\n".utf8))
            return nil
        }
        return line
    }

    /// Prints a line from any thread; while a line is being typed, above the prompt,
    /// which is drawn again with what was typed.
    static let printAbove: @Sendable (String) -> Void = { line in mfe_print(line) }

    func setCompletions(actions: [String: [String]], commands: [String]) {
        // One line per action: its name, then `field=` for each field; then each command alone.
        let lines =
            actions.keys.sorted().map { name in
                ([name] + (actions[name] ?? []).map { "\($0)=" }).joined(separator: "\t")
            }
            + commands
        mfe_set_completions(lines.joined(separator: "\n") + "\n")
    }

    /// Saves the history (with libedit).
    func close() { mfe_close() }
}
