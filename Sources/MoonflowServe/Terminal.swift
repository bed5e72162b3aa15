import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowLua

/// What `moonflow serve` prints: where it serves, the apps coming and going, and each app's
/// events as `moonflow run` prints them (pretty or jsonl), on standard output.
final class Terminal: @unchecked Sendable {
    private let format: OutputFormat
    private let color: Bool
    private let lock = NSLock()

    init(format: OutputFormat, color: Bool) {
        self.format = format
        self.color = color
    }

    private func write(_ text: String) {
        lock.withLock { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }
    }

    func serving(url: String, plugins: [String]) {
        let connect = "try await host.connect(devServer: \"\(url)\")"
        switch format {
        case .jsonl:
            write(EventLine.serve(url: url, plugins: plugins, connect: connect))
        case .pretty:
            write(
                "moonflow serve: \(plugins.map { LuaValue.escaped($0) }.joined(separator: ", ")) at \(url)\n  in the app (debug builds): \(connect)"
            )
        }
    }

    func inspector(url: String, app: String, feature: String) {
        switch format {
        case .jsonl: write(EventLine.inspector(url: url, app: app, feature: feature))
        // Names come from outside (an app's process name, a plugin's `name`): escaped before the
        // terminal, as event data is, so none can clear the screen or set the title.
        case .pretty: write("  inspector for \(LuaValue.escaped(app)) \(LuaValue.escaped(feature)): \(url)")
        }
    }

    /// Where editors attach (`--debug`).
    func debugger(address: String, token: String, file: String?) {
        switch format {
        case .jsonl:
            write(EventLine.debugger(address: address, token: token, tokenFile: file))
        case .pretty:
            write(
                "  debugger for the connected app at \(address) with token \(token)"
                    + (file.map { " (in \(LuaValue.escaped($0)))" } ?? "") + " (docs/debugging.md)")
        }
    }

    /// An app connected or went away: a `log` line.
    func log(_ message: String) {
        switch format {
        case .jsonl: write(EventLine.log(message))
        case .pretty: write("  · \(LuaValue.escaped(message))")
        }
    }

    func observer(app: String, feature: String) -> any RunObserver {
        let printer = EventPrinter(format: format, color: color)
        printer.width = TextWrap.width(of: STDOUT_FILENO)
        return Printer(terminal: self, printer: printer)
    }

    /// One feature's events, printed as they come.
    final class Printer: RunObserver, @unchecked Sendable {
        private let terminal: Terminal
        private let printer: EventPrinter
        init(terminal: Terminal, printer: EventPrinter) {
            self.terminal = terminal
            self.printer = printer
        }
        func started(_ run: RunDescription, dispatch: any RunDispatcher) {}
        func observe(_ event: FeatureEvent, t: Int, cause: LuaValue?) { terminal.write(printer.render(event, t: t)) }
        func input(_ action: LuaValue, t: Int) {}
    }
}
