import Foundation
import XCTest

/// Ctrl-C under `moonflow exec` as under `lua5.4`: SIGINT while Lua runs is the error
/// `interrupted!`, which a `pcall` catches and which otherwise ends the script with its
/// traceback; a script a shell started in the background (SIGINT ignored) gets it too,
/// since lua.c installs its handler regardless. Before, the first killed `exec` and the
/// second hung it. Each case runs under both programs.
final class ExecInterruptTests: XCTestCase {
    /// Starts `program ARGS` through sh, with SIGINT ignored when `ignoring`, and returns
    /// once it printed its first line and went on into what follows it.
    private func started(_ program: [String], ignoring: Bool) throws -> (Process, FileHandle, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", (ignoring ? "trap '' INT; " : "") + "exec \"$@\"", "sh"] + program
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // A program that takes no Ctrl-C would run on: it is killed after a minute, and fails.
        let watched = Watched(process: process)
        DispatchQueue.global().asyncAfter(deadline: .now() + 60) {
            if watched.process.isRunning { kill(watched.process.processIdentifier, SIGKILL) }
        }
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let more = output.fileHandleForReading.availableData
            guard !more.isEmpty else { break }
            line.append(more)
        }
        XCTAssertEqual(String(decoding: line, as: UTF8.self), "12\n", program.joined(separator: " "))
        Thread.sleep(forTimeInterval: 0.3)  // past print's return, into what follows (it runs for minutes)
        return (process, output.fileHandleForReading, errors)
    }

    private var programs: [(name: String, words: [String])] {
        get throws {
            var list = [("moonflow exec", [try Moonflow.binary().path, "exec"])]
            if let lua = Moonflow.lua { list.append(("lua5.4", [lua.path])) }
            return list
        }
    }

    func testCtrlCIsAnErrorThatPcallCatchesEvenWhenStartedInTheBackground() throws {
        let script = "pcall(function () print(12); while true do end end); print(42)"
        for (name, words) in try programs {
            for ignoring in [false, true] {
                let (process, output, _) = try started(words + ["-e", script], ignoring: ignoring)
                defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
                kill(process.processIdentifier, SIGINT)
                let rest = String(decoding: output.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                XCTAssertEqual(rest, "42\n", "\(name), SIGINT ignored: \(ignoring)")
                XCTAssertEqual(process.terminationStatus, 0, "\(name), SIGINT ignored: \(ignoring)")
            }
        }
    }

    func testCtrlCThatNothingCatchesEndsTheScriptWithItsTraceback() throws {
        for (name, words) in try programs {
            let (process, output, errors) = try started(
                words + ["-e", "print(12); while true do end"], ignoring: false)
            defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
            kill(process.processIdentifier, SIGINT)
            _ = output.readDataToEndOfFile()
            let printed = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, 1, name)
            // Where the hook raised it, `(command line):1:` comes first, as luaL_error gives it.
            // (On a machine too busy to reach the loop in time, it came as print returned.)
            let message = printed.drop { $0 != ":" }.replacingOccurrences(of: ": (command line):1: ", with: ": ")
                .replacingOccurrences(of: "\t[C]: in function 'print'\n", with: "")
            XCTAssertEqual(
                message,
                """
                : interrupted!
                stack traceback:
                \t(command line):1: in main chunk
                \t[C]: in ?

                """, name)
        }
    }

    /// A second Ctrl-C ends a program that the first could not stop (a long match in C).
    func testASecondCtrlCEndsAProgramStuckInC() throws {
        let script = "local s = string.rep('a', 100000); pcall(print, 12); string.find(s, '.*b'); print('finished')"
        for (name, words) in try programs {
            let (process, output, _) = try started(words + ["-e", script], ignoring: true)
            defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
            var sent = 0
            while process.isRunning && sent < 200 {
                kill(process.processIdentifier, SIGINT)
                sent += 1
                Thread.sleep(forTimeInterval: 0.05)
            }
            process.waitUntilExit()
            XCTAssertEqual(process.terminationReason, .uncaughtSignal, name)
            XCTAssertEqual(process.terminationStatus, SIGINT, name)
            XCTAssertEqual(String(decoding: output.readDataToEndOfFile(), as: UTF8.self), "", name)
            XCTAssertGreaterThanOrEqual(sent, 2, name)
        }
    }
}

/// A process handed to the timer that ends it (only read there).
private final class Watched: @unchecked Sendable {
    let process: Process
    init(process: Process) { self.process = process }
}
