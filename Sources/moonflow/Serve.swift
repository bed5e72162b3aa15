import ArgumentParser
import Foundation
import MoonflowEvents
import MoonflowHost
import MoonflowTool

/// `moonflow serve`: checks its arguments here, then becomes `moonflow-inspector serve …`
/// (exec), which holds the server, so that `moonflow` links no web server.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve plugin folders to running apps: push every save, show the apps' logs, errors and inspector.",
        discussion: """
            FOLDER is a plugin folder (with init.lua) or a folder of them (default: plugins). \
            The server prints its URL, with a random token, and the line to add to an app's \
            debug build: try await host.connect(devServer: "…"). Every save of a Lua \
            file is pushed to every connected app, which reloads with its state kept; a save \
            that does not load is reported here and in the app, which keeps its old code. \
            Each feature an app loads from the server prints its events here (as moonflow run \
            does) and gets an inspector page of its own, whose URL is printed. Runs until \
            Ctrl-C, SIGINT or SIGTERM.

            Exit status: 0 stopped, 1 cannot listen or watch, 2 usage error.
            """
    )

    @Argument(help: ArgumentHelp("Plugin folders, or folders of them (default: plugins).", valueName: "FOLDER"))
    var folders: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Listen on HOST (an address other than loopback lets a device on the local network connect).",
            valueName: "HOST"))
    var host = "127.0.0.1"

    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp("Listen on PORT (0: any free port).", valueName: "PORT"))
    var port = 0

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Use TOKEN (32 hex digits) instead of a random one: with the same --port, apps connected to an earlier run connect again.",
            valueName: "TOKEN"))
    var token: String?

    @Option(name: .long, help: "pretty (for people) or jsonl (one JSON object per event).")
    var format: OutputFormat = .pretty

    @Option(name: .long, help: "Colour pretty output: auto (on a terminal, unless NO_COLOR is set), always or never.")
    var color: ColorMode = .auto

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Write the first app feature's session to FILE as JSON Lines, for moonflow replay.", valueName: "FILE"))
    var record: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Serve a debugger for editors (the Debug Adapter Protocol) at [HOST:]PORT: breakpoints stop the connected app's features. See docs/debugging.md.",
            valueName: "[HOST:]PORT"))
    var debug: String?

    /// The folders served: those given, or ./plugins.
    var served: [String] { folders.isEmpty ? ["plugins"] : folders }

    func validate() throws {
        guard (0...65535).contains(port) else {
            throw ValidationError("--port must be 0 to 65535 (got \(port)); 0 picks any free port")
        }
        if let token, token.count != 32 || !token.allSatisfy(\.isHexDigit) {
            throw ValidationError("--token must be 32 hex digits, as the URL of an earlier moonflow serve shows it")
        }
        if host.isEmpty { throw ValidationError("--host needs an address, such as 127.0.0.1 or 0.0.0.0") }
        if let debug {
            do { _ = try InspectorPipe.address(debug) } catch { throw ValidationError("--debug \(error)") }
        }
        for folder in served {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
                throw ValidationError(
                    "\(folder) is not a folder; give plugin folders (with init.lua) or folders of them")
            }
        }
        if let record {
            let folder = PathText.parent(of: record)
            if !FileManager.default.isWritableFile(atPath: folder) {
                throw ValidationError(
                    "--record \(record): the folder \(folder) does not exist or is not writable; give a file in a folder you can write to"
                )
            }
        }
    }

    func run() throws {
        let binary = InspectorProcess.executable
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            FileHandle.standardError.write(
                Data(
                    "moonflow: serve needs \(InspectorPipe.executableName) beside moonflow, and \(binary.path) is missing; install the two files together\n"
                        .utf8))
            throw ExitCode(1)
        }
        if !["127.0.0.1", "localhost", "::1"].contains(host.lowercased()) {
            FileHandle.standardError.write(
                Data(
                    "moonflow: warning: --host \(host) is reachable from the network: anyone who can reach this machine and learns the URL's token can read the served plugins, see the apps' sessions and send them actions (use 127.0.0.1 unless a device must connect)\n"
                        .utf8))
        }
        let authority = host.contains(":") ? "[\(host)]" : host
        var arguments = ["serve", "--listen", "\(authority):\(port)", "--format", format.rawValue]
        if format == .pretty && color.enabled(isTerminal: isatty(STDOUT_FILENO) != 0) { arguments.append("--color") }
        if let record { arguments += ["--record", record] }
        if let token { arguments += ["--token", token] }
        if let debug { arguments += ["--debug", debug] }
        arguments += served
        let argv = ([binary.path] + arguments).map { strdup($0) } + [nil]
        execv(binary.path, argv)
        FileHandle.standardError.write(
            Data("moonflow: cannot start \(binary.path): \(String(cString: strerror(errno)))\n".utf8))
        throw ExitCode(1)
    }
}
