import Foundation
import XCTest

/// `moonflow exec ARGS` behaves as `lua5.4 ARGS`: each case runs
/// the same command line under both, where lua5.4 is installed, and compares what
/// a user sees (lua5.4's `lua5.4:` prefix read as `moonflow:`, its usage line's
/// name as `moonflow exec`). Where lua5.4 is missing, the expected output written
/// here stands in for it.
final class ExecParityTests: ScratchTestCase {
    /// Runs `moonflow exec ARGS` and, when installed, `lua5.4 ARGS`; asserts both
    /// print `expected` (stdout then stderr) and exit with `status`.
    private func assertLikeLua(
        _ arguments: [String], input: String? = nil, environment: [String: String] = [:],
        stdout: String = "", stderr: String = "", status: Int32 = 0,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let ours = try Moonflow.run(["exec"] + arguments, in: scratch, input: input, environment: environment)
        XCTAssertEqual(ours.stdout, stdout, "moonflow exec stdout", file: file, line: line)
        XCTAssertEqual(ours.stderr, stderr, "moonflow exec stderr", file: file, line: line)
        XCTAssertEqual(ours.status, status, "moonflow exec status", file: file, line: line)
        guard let lua = Moonflow.lua else { return }
        let theirs = try Moonflow.run(executable: lua, arguments, in: scratch, input: input, environment: environment)
        XCTAssertEqual(theirs.stdout, stdout, "lua5.4 stdout (the reference changed?)", file: file, line: line)
        XCTAssertEqual(
            theirs.stderr.replacingOccurrences(of: lua.path + ": ", with: "moonflow: ")
                .replacingOccurrences(of: "usage: " + lua.path + " ", with: "usage: moonflow exec "), stderr,
            "lua5.4 stderr (the reference changed?)", file: file, line: line)
        XCTAssertEqual(theirs.status, status, "lua5.4 status", file: file, line: line)
    }

    // 1. Lua's own searchers and loading rules under the trusted profile.

    func testRequireUsesLuasOwnSearchersAndMessages() throws {
        try write(
            "req.lua",
            """
            package.path = {}
            print(pcall(require, "x"))
            package.path = "./?.lua"
            package.cpath = "./?.so"
            local ok, err = pcall(require, "nosuch")
            print(ok, err)
            """)
        try assertLikeLua(
            ["req.lua"],
            stdout: """
                false\t'package.path' must be a string
                false\tmodule 'nosuch' not found:
                \tno field package.preload['nosuch']
                \tno file './nosuch.lua'
                \tno file './nosuch.so'

                """)
    }

    func testRequireLoadsAPrecompiledModule() throws {
        try write("mod.lua", "return { answer = 42 }\n")
        try write(
            "main.lua",
            """
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
        try write(
            "hook.lua",
            """
            print(debug.gethook())
            debug.sethook()
            local t = os.time()
            while os.time() - t < 30 do end
            print("survived")
            """)
        let result = try Moonflow.run(["exec", "--time-limit", "300", "hook.lua"], in: scratch)
        XCTAssertEqual(result.stdout, "nil\n", "debug.gethook() shows no hook of ours")
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(
            result.stderr.hasPrefix("moonflow: ") && result.stderr.contains("time limit of 300 ms exceeded"),
            result.stderr)
        XCTAssertTrue(result.stderr.contains("hook.lua:4: in main chunk"), result.stderr)
    }

    func testAScriptsOwnHookStillWorksUnderATimeLimit() throws {
        try write(
            "ownhook.lua",
            """
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
        try write(
            "state.lua",
            """
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
        try assertLikeLua(
            ["state.lua"], stdout: "generational\tincremental\nfinalizer\n",
            stderr: "Lua warning: x\nLua warning: abc\nLua warning: error in __gc (state.lua:5: in gc)\n")
    }

    // 6. Shebang, BOM, standard input.

    func testShebangBOMAndStandardInput() throws {
        try write("shebang.lua", "#!/usr/bin/env lua5.4\nprint('shebang', ...)\n")
        try assertLikeLua(["shebang.lua", "a"], stdout: "shebang\ta\n")
        try write("bom.lua", Data([0xEF, 0xBB, 0xBF]) + Data("print('bom')\n".utf8))
        try assertLikeLua(["bom.lua"], stdout: "bom\n")
        try assertLikeLua(
            ["-", "x", "y"], input: "print('stdin', arg[0], ...)\nerror('oops')\n",
            stdout: "stdin\t-\tx\ty\n",
            stderr:
                "moonflow: stdin:2: oops\nstack traceback:\n\t[C]: in function 'error'\n\tstdin:2: in main chunk\n\t[C]: in ?\n",
            status: 1)
    }

    // 7. Error output.

    func testErrorOutputIsLuas() throws {
        try write("syntax.lua", "x = = 1\n")
        try assertLikeLua(["syntax.lua"], stderr: "moonflow: syntax.lua:1: unexpected symbol near '='\n", status: 1)
        try write("object.lua", "error(setmetatable({}, { __tostring = function() return 'custom error' end }))\n")
        try assertLikeLua(["object.lua"], stderr: "moonflow: custom error\n", status: 1)
        try write("table.lua", "error({})\n")
        try assertLikeLua(
            ["table.lua"],
            stderr:
                "moonflow: (error object is a table value)\nstack traceback:\n\t[C]: in function 'error'\n\ttable.lua:1: in main chunk\n\t[C]: in ?\n",
            status: 1)
        try assertLikeLua(
            ["missing.lua"], stderr: "moonflow: cannot open missing.lua: No such file or directory\n", status: 1)
        try write(
            "closing.lua",
            """
            setmetatable({}, { __gc = function() io.stderr:write("closed\\n") end })
            local function explode() error("boom") end
            explode()
            """)
        try assertLikeLua(
            ["closing.lua"],
            stderr: """
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
        let result = try Moonflow.run(["exec", "--memory-limit", "64", "-W", "args.lua", "one", "--two"], in: scratch)
        XCTAssertEqual(result.status, 0, result.stderr)
        let fields = result.stdout.dropLast().split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(fields.count, 9, result.stdout)
        XCTAssertTrue(
            fields[0].hasSuffix("/moonflow-lua"), "arg[-4] is one word that starts moonflow exec: \(result.stdout)")
        XCTAssertEqual(
            Array(fields.dropFirst()), ["--memory-limit", "64", "-W", "args.lua", "one", "--two", "2", "nil"])
    }

    func testLuaInitRunsFirst() throws {
        try write("init.lua", "print('main', greeting)\n")
        try write("setup.lua", "greeting = 'from a file'\n")
        try assertLikeLua(["init.lua"], environment: ["LUA_INIT": "greeting = 'hello'"], stdout: "main\thello\n")
        try assertLikeLua(["init.lua"], environment: ["LUA_INIT": "@setup.lua"], stdout: "main\tfrom a file\n")
        try assertLikeLua(
            ["init.lua"], environment: ["LUA_INIT": "greeting = 'plain'", "LUA_INIT_5_4": "greeting = 'versioned'"],
            stdout: "main\tversioned\n")
        try assertLikeLua(
            ["init.lua"], environment: ["LUA_INIT": "error('bad init')"],
            stderr:
                "moonflow: LUA_INIT:1: bad init\nstack traceback:\n\t[C]: in function 'error'\n\tLUA_INIT:1: in main chunk\n\t[C]: in ?\n",
            status: 1)
    }

    // 9. lua5.4's own command line.

    func testOptionsRunInTheirOrderBeforeTheScript() throws {
        try write("mod.lua", "print('loading', ...)\nreturn { name = 'mod' }\n")
        try write("main.lua", "print('main', x, mod.name, g.name, ...)\nwarn('from main')\n")
        try assertLikeLua(
            [
                "-e", "x = 1", "-l", "mod", "-e", "warn('before -W')", "-W", "-lg=mod", "-eprint(x + 1)", "main.lua",
                "a", "b",
            ],
            stdout: "loading\tmod\t./mod.lua\n2\nmain\t1\tmod\tmod\ta\tb\n",
            stderr: "Lua warning: from main\n")
        // -e alone: no script, nothing read from standard input.
        try assertLikeLua(
            ["-e", "print(arg[0] ~= nil, arg[1], arg[2], #arg, ...)"], input: "print('not run')\n",
            stdout: "true\t-e\tprint(arg[0] ~= nil, arg[1], arg[2], #arg, ...)\t2\n")
    }

    func testTheScriptGetsArgAsTheOptionsLeftIt() throws {
        try write("show.lua", "print('show', ...)\n")
        try assertLikeLua(["-e", "arg = { 'changed' }", "show.lua", "a"], stdout: "show\tchanged\n")
        try assertLikeLua(["-e", "arg = 5", "show.lua", "a"], stderr: "moonflow: 'arg' is not a table\n", status: 1)
    }

    func testAFailingOptionStopsTheRest() throws {
        try write("never.lua", "print('never')\n")
        try assertLikeLua(
            ["-e", "print(1)", "-e", "error('two')", "-e", "print(3)", "never.lua"], stdout: "1\n",
            stderr:
                "moonflow: (command line):1: two\nstack traceback:\n\t[C]: in function 'error'\n\t(command line):1: in main chunk\n\t[C]: in ?\n",
            status: 1)
        try assertLikeLua(
            ["-e", "x ="], stderr: "moonflow: (command line):1: unexpected symbol near <eof>\n", status: 1)
        try assertLikeLua(
            ["-e", "package.path = './?.lua' package.cpath = './?.so'", "-l", "nosuch", "never.lua"],
            stderr: """
                moonflow: module 'nosuch' not found:
                \tno field package.preload['nosuch']
                \tno file './nosuch.lua'
                \tno file './nosuch.so'
                stack traceback:
                \t[C]: in function 'require'
                \t[C]: in ?

                """, status: 1)
    }

    func testBadOptionsPrintTheUsage() throws {
        let usage = """
            usage: moonflow exec [options] [script [args]]
            Available options are:
              -e stat   execute string 'stat'
              -i        enter interactive mode after executing 'script'
              -l mod    require library 'mod' into global 'mod'
              -l g=mod  require library 'mod' into global 'g'
              -v        show version information
              -E        ignore environment variables
              -W        turn warnings on
              --        stop handling options
              -         stop handling options and execute stdin

            """
        try assertLikeLua(["-x", "script.lua"], stderr: "moonflow: unrecognized option '-x'\n" + usage, status: 1)
        try assertLikeLua(["--two"], stderr: "moonflow: unrecognized option '--two'\n" + usage, status: 1)
        // -h is not lua5.4's help (it has none): moonflow's own is --help.
        try assertLikeLua(["-h"], stderr: "moonflow: unrecognized option '-h'\n" + usage, status: 1)
        try assertLikeLua(["-iv"], stderr: "moonflow: unrecognized option '-iv'\n" + usage, status: 1)
        try assertLikeLua(["-e"], stderr: "moonflow: '-e' needs argument\n" + usage, status: 1)
        try assertLikeLua(["-l", "-v"], stderr: "moonflow: '-l' needs argument\n" + usage, status: 1)
    }

    func testVersionIsLuasOwnLine() throws {
        let line =
            try Moonflow.lua.map { try Moonflow.run(executable: $0, ["-v"], in: scratch).stdout }
            ?? "Lua 5.4.4  Copyright (C) 1994-2022 Lua.org, PUC-Rio\n"
        XCTAssertTrue(line.hasPrefix("Lua 5.4."), line)
        try assertLikeLua(["-v"], input: "print('not run')\n", stdout: line)
        try assertLikeLua(["-v", "-e", "print('after')"], stdout: line + "after\n")
    }

    func testStandardInputWithoutAScript() throws {
        try assertLikeLua([], input: "print('piped', ...)\n", stdout: "piped\n")
        try assertLikeLua(["--"], input: "print('after --')\n", stdout: "after --\n")
        // Run this way, an error is reported and the status is still 0.
        try assertLikeLua(
            [], input: "error('oops')\n",
            stderr:
                "moonflow: stdin:1: oops\nstack traceback:\n\t[C]: in function 'error'\n\tstdin:1: in main chunk\n\t[C]: in ?\n"
        )
        // After --, a script named - is a file.
        try assertLikeLua(["--", "-"], stderr: "moonflow: cannot open -: No such file or directory\n", status: 1)
    }

    func testInteractiveLoopAfterTheScript() throws {
        let version =
            try Moonflow.lua.map { try Moonflow.run(executable: $0, ["-v"], in: scratch).stdout }
            ?? "Lua 5.4.4  Copyright (C) 1994-2022 Lua.org, PUC-Rio\n"
        try write("setup.lua", "answer = 42\n")
        let input =
            "answer\n=answer + 1\nfor i = 1, 2 do\nprint(i) end\nreturn 1, nil, 'a'\nerror('oops')\n_PROMPT = 'P> '\nx =\n"
        // Each line read is echoed after its prompt, as lua5.4 does when standard input is not a terminal.
        try assertLikeLua(
            ["-i", "setup.lua"], input: input,
            stdout: version + """
                > answer
                42
                > =answer + 1
                43
                > for i = 1, 2 do
                >> print(i) end
                1
                2
                > return 1, nil, 'a'
                1\tnil\ta
                > error('oops')
                > _PROMPT = 'P> '
                P> x =
                >> P> \n
                """,
            stderr:
                "stdin:1: oops\nstack traceback:\n\t[C]: in function 'error'\n\tstdin:1: in main chunk\n\t[C]: in ?\n(null)\n"
        )
    }

    /// A prompt that is not a string is shown through `tostring` (its `__tostring` too),
    /// once each time it is shown, as lua.c shows it.
    func testAPromptThatIsNotAStringIsShownThroughTostring() throws {
        let version =
            try Moonflow.lua.map { try Moonflow.run(executable: $0, ["-v"], in: scratch).stdout }
            ?? "Lua 5.4.4  Copyright (C) 1994-2022 Lua.org, PUC-Rio\n"
        let prompts =
            "local C = 0; _PROMPT = setmetatable({}, {__tostring = function () C = C + 1; return C end}); _PROMPT2 = 7"
        try assertLikeLua(
            ["-e", prompts, "-i"], input: "a = 2\nfor i = 1, 1 do\nend\n",
            stdout: version + "1a = 2\n2for i = 1, 1 do\n7end\n3\n")
    }

    func testIgnoringTheEnvironment() throws {
        let environment = ["LUA_INIT": "print('init')", "LUA_PATH": "./nowhere/?.lua"]
        try assertLikeLua(
            ["-e", "print(package.path:find('nowhere', 1, true) ~= nil)"], environment: environment,
            stdout: "init\ntrue\n")
        try assertLikeLua(
            ["-E", "-e", "print(package.path:find('nowhere', 1, true) ~= nil)"], environment: environment,
            stdout: "false\n")
    }

    /// Started as `moonflow-lua`, messages start with the word it was started by, as
    /// lua5.4's start with its argv[0] (Lua's own suite matches `arg[-1] .. ": "`); a
    /// `moonflow exec` that the script starts says `moonflow` again.
    func testMoonflowLuaNamesItselfInItsMessagesAsStarted() throws {
        let binary = try Moonflow.binary()
        let wrapper = binary.deletingLastPathComponent().appendingPathComponent("moonflow-lua")
        try XCTSkipUnless(
            FileManager.default.isExecutableFile(atPath: wrapper.path), "no moonflow-lua beside \(binary.path)")
        let failed = try Moonflow.run(executable: wrapper, ["-e", "error('oops')"], in: scratch)
        XCTAssertTrue(
            failed.stderr.hasPrefix(wrapper.path + ": (command line):1: oops\nstack traceback:"), failed.stderr)
        XCTAssertEqual(failed.status, 1)
        let bad = try Moonflow.run(executable: wrapper, ["-x"], in: scratch)
        XCTAssertTrue(
            bad.stderr.hasPrefix(wrapper.path + ": unrecognized option '-x'\nusage: " + wrapper.path + " [options]"),
            bad.stderr)
        let inner = try Moonflow.run(
            executable: wrapper,
            ["-e", "os.execute(string.format('%q exec -e %q', \(String(reflecting: binary.path)), 'error(1)'))"],
            in: scratch)
        XCTAssertTrue(inner.stderr.hasPrefix("moonflow: 1\n"), inner.stderr)
    }

    func testAScriptStartsItsInterpreterAgainFromArg() throws {
        let version =
            try Moonflow.lua.map { try Moonflow.run(executable: $0, ["-v"], in: scratch).stdout }
            ?? "Lua 5.4.4  Copyright (C) 1994-2022 Lua.org, PUC-Rio\n"
        // As Penlight's app.lua() does: every word from the lowest index to -1, quoted.
        try write(
            "again.lua",
            """
            local i = -1
            while arg[i - 1] do i = i - 1 end
            local words = {}
            for j = i, -1 do words[#words + 1] = "'" .. arg[j]:gsub("'", "'\\''") .. "'" end
            local lua = table.concat(words, " ")
            io.write(io.popen(lua .. " -e 'print(10 + 1, arg[1])' - x", "r"):read("a"))
            io.write(io.popen(arg[i] .. " -v"):read("a"))
            print(os.execute(arg[i] .. " -e 'os.exit(3)'"))
            """)
        try assertLikeLua(["again.lua"], stdout: "11\tx\n" + version + "nil\texit\t3\n")
        try assertLikeLua(["-W", "again.lua"], stdout: "11\tx\n" + version + "nil\texit\t3\n")
        // The lowest index alone, at -1 when no option comes before the script.
        try write("minus1.lua", "print(os.execute(arg[-1] .. ' -e \"os.exit(4)\"'))\n")
        try assertLikeLua(["minus1.lua"], stdout: "nil\texit\t4\n")
    }

    func testPenlightsAppLuaStartsMoonflowExecAgain() throws {
        let probe = ["-e", "require 'pl.app'"]
        let found =
            try Moonflow.lua.map { try Moonflow.run(executable: $0, probe, in: scratch) }
            ?? Moonflow.run(["exec"] + probe, in: scratch)
        try XCTSkipUnless(
            found.status == 0, "Penlight is not installed (Debian's lua-penlight, which lua-busted brings)")
        let version =
            try Moonflow.lua.map { try Moonflow.run(executable: $0, ["-v"], in: scratch).stdout }
            ?? "Lua 5.4.4  Copyright (C) 1994-2022 Lua.org, PUC-Rio\n"
        try write(
            "app.lua",
            """
            local app, utils = require 'pl.app', require 'pl.utils'
            local lua = app.lua()
            print(utils.executeex(lua .. ' -e "print(1 + 2)"'))
            print(utils.executeex(lua .. ' -v'))
            """)
        try assertLikeLua(["app.lua"], stdout: "true\t0\t3\n\t\n" + "true\t0\t" + version + "\t\n")
        try assertLikeLua(["-W", "app.lua"], stdout: "true\t0\t3\n\t\n" + "true\t0\t" + version + "\t\n")
    }

    func testMoonflowsOwnOptionsComeFirst() throws {
        try write("slow.lua", "while true do end\n")
        let result = try Moonflow.run(["exec", "--time-limit", "200", "-e", "x = 1", "slow.lua"], in: scratch)
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderr.hasPrefix("moonflow: time limit of 200 ms exceeded"), result.stderr)
        let help = try Moonflow.run(["exec", "--help"], in: scratch)
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.stdout.contains("-e stat") && help.stdout.contains("--time-limit"), help.stdout)
    }
}
