import Foundation
import MoonflowHost
import LuaKit
import MoonflowLua

/// Where `moonflow run`'s input lines come from: a file, standard input, a prompt, or none
/// (each line is then parsed as an `InputLine`).
package final class InputSource: @unchecked Sendable {
    /// Named in error locations (`actions.jsonl:3`, `stdin:3`).
    package let name: String
    /// A person typing at a prompt (shorthand allowed, a prompt is shown).
    package let isInteractive: Bool
    let allowsShorthand: Bool
    private var lines: IndexingIterator<[String]>?
    private let readLine: (() -> String?)?

    /// Every line of a file.
    package init(file path: String) throws {
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue {
            throw HostError(
                "cannot read actions file \(path): it is a folder; give a JSON Lines file, or - for standard input")
        }
        guard let handle = FileHandle(forReadingAtPath: path), let data = try? handle.readToEnd() ?? Data() else {
            throw HostError("cannot read actions file \(path): it does not exist or is not readable")
        }
        name = path
        isInteractive = false
        allowsShorthand = false
        reader = nil
        lines = String(decoding: data, as: UTF8.self).components(separatedBy: "\n").makeIterator()
        readLine = nil
    }

    /// Standard input, read as it comes; `prompt` shows a prompt first (a terminal).
    package init(standardInput prompt: Bool) {
        name = "stdin"
        isInteractive = prompt
        allowsShorthand = prompt
        reader = nil
        readLine = {
            if prompt { FileHandle.standardOutput.write(Data("> ".utf8)) }
            return Swift.readLine(strippingNewline: true)
        }
    }

    /// Lines from `next` (nil ends the input), as if typed at the prompt when
    /// `interactive` (shorthand and `:` commands allowed).
    package init(interactive: Bool, name: String = "input", next: @escaping () -> String?) {
        self.name = name
        isInteractive = interactive
        allowsShorthand = interactive
        readLine = next
        reader = nil
    }

    /// A person at a prompt, through `reader` (line editing, history, completion).
    package init(prompt reader: any LineReader) {
        name = "stdin"
        isInteractive = true
        allowsShorthand = true
        self.reader = reader
        readLine = { reader.readLine(prompt: "> ") }
    }

    /// The prompt's line source, when there is one (told what to complete once the feature is loaded).
    package let reader: (any LineReader)?

    /// No input at all.
    package init() {
        name = "input"
        isInteractive = false
        allowsShorthand = false
        reader = nil
        lines = [String]().makeIterator()
        readLine = nil
    }

    func next() -> String? {
        if ended { return nil }
        if let readLine { return readLine() }
        return lines?.next()
    }

    /// Ends the input early (`:quit` at the prompt): `next()` returns nil from now on.
    func end() { ended = true }
    private var ended = false
}

/// Reads lines typed at the prompt (the command line's is libedit's line editor).
package protocol LineReader: AnyObject, Sendable {
    /// The next line without its newline, or nil at the end of input (Ctrl-D).
    func readLine(prompt: String) -> String?
    /// What Tab completes: the action names and, after one, its fields (`by=`) and the commands.
    func setCompletions(actions: [String: [String]], commands: [String])
}
