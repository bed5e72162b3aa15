import ArgumentParser
import Foundation
import MoonflowDebug
import MoonflowHost

/// `--debug [HOST:]PORT` and `--debug-wait` of `run` and `test`: the debugger's server,
/// its address announced, and each Lua state the command makes served by it.
extension DebugServer {
    /// Starts the server at `address` and prints where editors attach, on standard error (a
    /// jsonl run's standard output stays JSON only).
    static func start(_ address: String, name: String, wait: Bool) throws -> DebugHandle {
        let (host, port) = try InspectorPipe.address(address)
        let server: DebugServer
        do {
            server = try DebugServer(host: host, port: port, name: name) { line in
                FileHandle.standardError.write(
                    Data(("moonflow: " + line.trimmingCharacters(in: .newlines) + "\n").utf8))
            }
        } catch {
            FileHandle.standardError.write(Data("moonflow: --debug \(error)\n".utf8))
            throw ExitCode(1)
        }
        if !server.isLoopback {
            FileHandle.standardError.write(
                Data(
                    "moonflow: warning: --debug \(address) is reachable from the network: anyone who can reach this machine can attach, read the state and evaluate Lua in it; use 127.0.0.1 unless you mean it\n"
                        .utf8))
        }
        let waiting = wait ? " (waiting for the editor to attach)" : ""
        FileHandle.standardError.write(Data("moonflow: \(server.announcement)\(waiting)\n".utf8))
        return DebugHandle(server: server, wait: wait)
    }
}

/// `--debug` and `--debug-wait` as given to `run`, `test` or `replay`: an address that
/// parses, and no `--debug-wait` without `--debug`.
func validateDebugOptions(_ debug: String?, wait: Bool) throws {
    if let debug {
        do { _ = try InspectorPipe.address(debug) } catch { throw ValidationError("--debug \(error)") }
    } else if wait {
        throw ValidationError("--debug-wait waits for an editor to attach to the debugger; add --debug [HOST:]PORT")
    }
}

/// What a command holds of its debugger: the server, and whether the first state waits.
struct DebugHandle: Sendable {
    let server: DebugServer
    let wait: Bool

    /// For `prepareHost`: serves each host's state, and with `--debug-wait` waits until the
    /// editor has sent its breakpoints (once it has, or has gone, no state waits again).
    func prepare(_ host: FeatureHost) {
        server.controller.serve(host.lua)
        if wait { server.controller.waitForConfiguration() }
    }
}
