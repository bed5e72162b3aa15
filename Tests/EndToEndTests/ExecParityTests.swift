import Foundation
import XCTest

/// `moonflow exec FILE` behaves as `lua5.4 FILE`: each case runs
/// the same script under both, where lua5.4 is installed, and compares what
/// a user sees (lua5.4's `lua5.4:` prefix read as `moonflow:`). Where lua5.4
/// is missing, the expected output written here stands in for it.
final class ExecParityTests: ScratchTestCase {
    /// Runs `moonflow exec ARGS` and, when installed, `lua5.4 ARGS`; asserts both
    /// print `expected` (stdout then stderr) and exit with `status`.
    private func assertLikeLua(_ arguments: [String], input: String? = nil, environment: [String: String] = [:],
                               stdout: String = "", stderr: String = "", status: Int32 = 0,
                               file: StaticString = #filePath, line: UInt = #line) throws {
        let ours = try Moonflow.run(["exec"] + arguments, in: scratch, input: input, environment: environment)
        XCTAssertEqual(ours.stdout, stdout, "moonflow exec stdout", file: file, line: line)
        XCTAssertEqual(ours.stderr, stderr, "moonflow exec stderr", file: file, line: line)
        XCTAssertEqual(ours.status, status, "moonflow exec status", file: file, line: line)
        guard let lua = Moonflow.lua else { return }
        let theirs = try Moonflow.run(executable: lua, arguments, in: scratch, input: input, environment: environment)
        XCTAssertEqual(theirs.stdout, stdout, "lua5.4 stdout (the reference changed?)", file: file, line: line)
        XCTAssertEqual(theirs.stderr.replacingOccurrences(of: lua.path + ": ", with: "moonflow: "), stderr,
                       "lua5.4 stderr (the reference changed?)", file: file, line: line)
        XCTAssertEqual(theirs.status, status, "lua5.4 status", file: file, line: line)
    }

    // 1. Lua's own searchers and loading rules under the trusted profile.

    func testRequireUsesLuasOwnSearchersAndMessages() throws {
        try write("req.lua", """
            package.path = {}
            print(pcall(require, "x"))
            package.path = "./?.lua"
            package.cpath = "./?.so"
            local ok, err = pcall(require, "nosuch")
            print(ok, err)
            """)
        try assertLikeLua(["req.lua"], stdout: """
            false\t'package.path' must be a string
            false\tmodule 'nosuch' not found:
            \tno field package.preload['nosuch']
            \tno file './nosuch.lua'
            \tno file './nosuch.so'

            """)
    }

    func testRequireLoadsAPrecompiledModule() throws {
        try write("mod.lua", "return { answer = 42 }\n")
        try write("main.lua", """
            local f = assert(io.open("compiled.lua", "wb"))
            f:write(string.dump(assert(loadfile("mod.lua"))))
            f:close()
            package.path = "./?.lua"
            print(require("compiled").answer)
            """)
        try assertLikeLua(["main.lua"], stdout: "42\n")
    }

    // 2. The time limit is invisible and cannot be removed.

    func testTheTimeLimitIsInvisibleAndCannotBeRemoved() throws {
        try write("hook.lua", """
            print(debug.gethook())
            debug.sethook()
            local t = os.time()
            while os.time() - t < 30 do end
            print("survived")
            """)
        let result = try Moonflow.run(["exec", "--time-limit", "300", "hook.lua"], in: scratch)
        XCTAssertEqual(result.stdout, "nil\n", "debug.gethook() shows no hook of ours")
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.hasPrefix("moonflow: ") && result.stderr.contains("time limit of 300 ms exceeded"), result.stderr)
        XCTAssertTrue(result.stderr.contains("hook.lua:4: in main chunk"), result.stderr)
    }

    func testAScriptsOwnHookStillWorksUnderATimeLimit() throws {
        try write("ownhook.lua", """
            local lines = 0
            debug.sethook(function() lines = lines + 1 end, "l")
            local a = 1
            local b = 2
            debug.sethook()
            print(lines, debug.gethook())
            """)
        let result = try Moonflow.run(["exec", "--time-limit", "5000", "ownhook.lua"], in: scratch)
        XCTAssertEqual(result.stdout, "3\tnil\n", result.stderr)
    }

    // 3, 4, 5. Warnings, the collector's mode, finalizers at exit.

    func testWarningsCollectorModeAndFinalizersAtExit() throws {
        try write("state.lua", """
            warn("not shown")
            warn("@on")
            warn("x")
            warn("a", "b", "c")
            setmetatable({}, { __gc = function() error("in gc") end })
            collectgarbage()
            print(collectgarbage("incremental"), collectgarbage("generational"))
            local again = true
            setmetatable({}, { __gc = function(o)
              print("finalizer")
              if again then again = false; setmetatable(o, getmetatable(o)) end
            end })
            """)
        try assertLikeLua(["state.lua"], stdout: "generational\tincremental\nfinalizer\n",
                          stderr: "Lua warning: x\nLua warning: abc\nLua warning: error in __gc (state.lua:5: in gc)\n")
    }

    // 6. Shebang, BOM, standard input.

    func testShebangBOMAndStandardInput() throws {
        try write("shebang.lua", "#!/usr/bin/env lua5.4\nprint('shebang', ...)\n")
        try assertLikeLua(["shebang.lua", "a"], stdout: "shebang\ta\n")
        try write("bom.lua", Data([0xEF, 0xBB, 0xBF]) + Data("print('bom')\n".utf8))
        try assertLikeLua(["bom.lua"], stdout: "bom\n")
        try assertLikeLua(["-", "x", "y"], input: "print('stdin', arg[0], ...)\nerror('oops')\n",
                          stdout: "stdin\t-\tx\ty\n",
                          stderr: "moonflow: stdin:2: oops\nstack traceback:\n\t[C]: in function 'error'\n\tstdin:2: in main chunk\n\t[C]: in ?\n",
                          status: 1)
    }

    // 7. Error output.

    func testErrorOutputIsLuas() throws {
        try write("syntax.lua", "x = = 1\n")
        try assertLikeLua(["syntax.lua"], stderr: "moonflow: syntax.lua:1: unexpected symbol near '='\n", status: 1)
        try write("object.lua", "error(setmetatable({}, { __tostring = function() return 'custom error' end }))\n")
        try assertLikeLua(["object.lua"], stderr: "moonflow: custom error\n", status: 1)
        try write("table.lua", "error({})\n")
        try assertLikeLua(["table.lua"], stderr: "moonflow: (error object is a table value)\nstack traceback:\n\t[C]: in function 'error'\n\ttable.lua:1: in main chunk\n\t[C]: in ?\n", status: 1)
        try assertLikeLua(["missing.lua"], stderr: "moonflow: cannot open missing.lua: No such file or directory\n", status: 1)
        try write("closing.lua", """
            setmetatable({}, { __gc = function() io.stderr:write("closed\\n") end })
            local function explode() error("boom") end
            explode()
            """)
        try assertLikeLua(["closing.lua"], stderr: """
            moonflow: closing.lua:2: boom
            stack traceback:
            \t[C]: in function 'error'
            \tclosing.lua:2: in local 'explode'
            \tclosing.lua:3: in main chunk
            \t[C]: in ?
            closed

            """, status: 1)
    }

    // 8. arg and LUA_INIT.

    func testArgumentsBeforeTheScriptAreAtNegativeIndices() throws {
        try write("args.lua", "print(arg[-4], arg[-3], arg[-2], arg[-1], arg[0], arg[1], arg[2], #arg, arg[-5])\n")
        let result = try Moonflow.run(["exec", "--memory-limit", "64", "args.lua", "one", "--two"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stderr)
        let fields = result.stdout.dropLast().split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(fields.count, 9, result.stdout)
        XCTAssertTrue(fields[0].hasSuffix("moonflow"), "arg[-4] is the program: \(result.stdout)")
        XCTAssertEqual(Array(fields.dropFirst()), ["exec", "--memory-limit", "64", "args.lua", "one", "--two", "2", "nil"])
    }

    func testLuaInitRunsFirst() throws {
        try write("init.lua", "print('main', greeting)\n")
        try write("setup.lua", "greeting = 'from a file'\n")
        try assertLikeLua(["init.lua"], environment: ["LUA_INIT": "greeting = 'hello'"], stdout: "main\thello\n")
        try assertLikeLua(["init.lua"], environment: ["LUA_INIT": "@setup.lua"], stdout: "main\tfrom a file\n")
        try assertLikeLua(["init.lua"], environment: ["LUA_INIT": "greeting = 'plain'", "LUA_INIT_5_4": "greeting = 'versioned'"],
                          stdout: "main\tversioned\n")
        try assertLikeLua(["init.lua"], environment: ["LUA_INIT": "error('bad init')"],
                          stderr: "moonflow: LUA_INIT:1: bad init\nstack traceback:\n\t[C]: in function 'error'\n\tLUA_INIT:1: in main chunk\n\t[C]: in ?\n",
                          status: 1)
    }
}
