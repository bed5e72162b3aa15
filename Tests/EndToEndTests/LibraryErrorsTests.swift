import Foundation
import XCTest

/// Every function of Lua's standard libraries, called with wrong arguments under
/// `moonflow exec`, fails with lua5.4's own message: the function's name, the argument's
/// number (counted from a method's self as Lua counts it) and the caller's `chunk:line:`.
/// Moonflow wraps some of them (the host's callout before io and os.execute, the time
/// limit's table.sort, table.move, string.rep, pcall and coroutines); a wrapper that
/// showed itself gave `bad argument #1 to '?'` with no position. Compared with `lua5.4`
/// itself, which scripts/setup installs.
final class LibraryErrorsTests: ScratchTestCase {
    /// Calls each function from a line of its own chunk with argument lists that fail at
    /// each position in turn, and prints what each call gave (`ok` or the message).
    private static let calls = """
        local libs = { "_G", "coroutine", "debug", "io", "math", "os", "package", "string", "table", "utf8" }
        local arglists = { "", "{}", "{}, {}", "1, {}", "'', {}", "1, 1, {}", "'', '', {}", "1, 1, 1, {}" }
        -- Calls that would end the run, write files, read the terminal or change what later
        -- calls see: only the argument lists that fail on their first argument.
        local firstOnly = { ["os.exit"] = true, ["os.execute"] = true, ["io.popen"] = true, ["io.output"] = true,
          ["io.input"] = true, ["os.tmpname"] = true, ["os.setlocale"] = true, ["debug.debug"] = true,
          ["debug.setmetatable"] = true, ["debug.sethook"] = true, ["io.write"] = true,
          ["collectgarbage"] = true, ["dofile"] = true, ["loadfile"] = true, ["math.randomseed"] = true,
          ["require"] = true, ["coroutine.yield"] = true }
        local never = { print = true }  -- prints its arguments (a table shows its address)
        local function shown(v) return type(v) == "string" and v or "(" .. type(v) .. ")" end
        local count, failed = 0, 0
        local function try(source)
          count = count + 1
          local ok, err = pcall(assert(load(source, "=calls", "t")))
          if not ok then failed = failed + 1 end
          print(source, ok and "ok" or shown(err))
        end
        local functions = 0
        for _, lib in ipairs(libs) do
          local t = lib == "_G" and _G or _G[lib]
          local names = {}
          for name, f in pairs(t) do if type(f) == "function" then names[#names + 1] = name end end
          table.sort(names)
          functions = functions + #names
          for _, name in ipairs(names) do
            local full = lib == "_G" and name or lib .. "." .. name
            for _, args in ipairs(never[full] and {} or arglists) do
              if not firstOnly[full] or args:sub(1, 2) == "{}" then try("return " .. full .. "(" .. args .. ")") end
            end
          end
        end
        -- Methods, where Lua counts arguments from self: a file's (standard input's) and a string's.
        local methods = {}
        for name in pairs(getmetatable(io.stdin).__index) do methods[#methods + 1] = name end
        table.sort(methods)
        for _, name in ipairs(methods) do
          for _, args in ipairs(arglists) do try("return io.stdin:" .. name .. "(" .. args .. ")") end
        end
        local strings = {}
        for name in pairs(string) do strings[#strings + 1] = name end
        table.sort(strings)
        for _, name in ipairs(strings) do
          for _, args in ipairs({ "{}", "1, {}", "1, 1, {}" }) do try("return ('x'):" .. name .. "(" .. args .. ")") end
        end
        print(functions .. " functions, " .. #methods .. " file methods, " .. count .. " calls, " .. failed .. " failed")
        """

    func testEveryLibraryFunctionFailsWithLuasOwnMessage() throws {
        let lua = try XCTUnwrap(Moonflow.lua, "lua5.4 is the reference: scripts/setup installs it")
        try write("calls.lua", Self.calls)
        let theirs = try Moonflow.run(executable: lua, ["calls.lua"], in: scratch, input: "")
        XCTAssertEqual(theirs.status, 0, theirs.stderr)
        let summary = try XCTUnwrap(theirs.stdout.split(separator: "\n").last.map(String.init))
        let numbers = summary.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        XCTAssertGreaterThanOrEqual(numbers.first ?? 0, 127, "every function is called: \(summary)")
        XCTAssertGreaterThan(numbers.last ?? 0, 500, "most calls fail, at every position: \(summary)")
        // Plain, and with the time and memory limits whose wrappers replace library functions.
        for limits in [[], ["--time-limit", "100000", "--memory-limit", "512"]] {
            let ours = try Moonflow.run(["exec"] + limits + ["calls.lua"], in: scratch, input: "")
            XCTAssertEqual(ours.status, 0, ours.stderr)
            let expected = theirs.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            let got = ours.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            let differing = zip(expected, got).filter { $0 != $1 }.prefix(10)
                .map { "lua5.4:   \($0.0)\nmoonflow: \($0.1)" }
            XCTAssertEqual(expected.count, got.count, "calls made \(limits)")
            XCTAssertTrue(differing.isEmpty, "\(limits):\n" + differing.joined(separator: "\n"))
        }
    }

    /// An uncaught error in a wrapped function: the same message and traceback, with no
    /// frame of the wrapper's (`[C]: in ?`).
    func testAnUncaughtLibraryErrorPrintsLuasTraceback() throws {
        let lua = try XCTUnwrap(Moonflow.lua, "lua5.4 is the reference: scripts/setup installs it")
        try write("read.lua", "local f = io.stdin\nf:read({})\n")
        try write("sort.lua", "table.sort({3, 1, 2, 5, 4, 7, 6, 9, 8, 10, 12, 11}, function(a, b) return true end)\n")
        try write("execute.lua", "os.execute({})\n")
        for script in ["read.lua", "sort.lua", "execute.lua"] {
            let theirs = try Moonflow.run(executable: lua, [script], in: scratch, input: "")
            let expected = theirs.stderr.replacingOccurrences(of: lua.path + ": ", with: "moonflow: ")
            XCTAssertTrue(expected.contains("stack traceback:\n\t[C]: in "), expected)
            for limits in [[], ["--time-limit", "100000"]] {
                let ours = try Moonflow.run(["exec"] + limits + [script], in: scratch, input: "")
                XCTAssertEqual(ours.stderr, expected, "\(script) \(limits)")
                XCTAssertEqual(ours.status, theirs.status, "\(script) \(limits)")
            }
        }
    }
}
