import Foundation
import LuaKit
import XCTest

/// A state with a time limit matches patterns with Moonflow's own matcher (it
/// stops at the deadline). It must give exactly what Lua's gives: the same
/// script, thousands of generated patterns over find, match, gmatch and gsub,
/// runs in such a state and under `lua5.4`, and the outputs are compared.
final class PatternMatchTests: XCTestCase {
    /// Prints one line per call: the results, or the error message.
    static let script = #"""
        local out = {}
        local function show(ok, ...)
          local t = { ok and "ok" or "err" }
          for i = 1, select("#", ...) do t[#t + 1] = tostring((select(i, ...))) end
          out[#out + 1] = table.concat(t, "|")
        end
        local function gmatchAll(s, p, init)
          local t = {}
          for a, b, c in string.gmatch(s, p, init) do
            t[#t + 1] = tostring(a) .. "," .. tostring(b) .. "," .. tostring(c)
            if #t > 40 then break end
          end
          return table.concat(t, ";")
        end
        local seed = 20240611
        local function rnd(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n + 1 end
        local atoms = { "a", "b", "c", ".", "%a", "%d", "%s", "%w", "%p", "%x", "%u", "%l", "%c", "%g", "%A",
          "%S", "%D", "[ab]", "[^a]", "[a-c]", "[%d_]", "[]]", "[^]]", "[a-]", "[-a]", "[%a-]", "%%", "%.", "%]",
          "(", ")", "()", "%1", "%2", "%0", "%b()", "%bab", "%f[%w]", "%f[%W]", "%f[a]", "^", "$", "*", "+", "-",
          "?", "*", "+", "-", "?", "[", "%", "%z", "x", "1", " ", "=", "%b", "%f", "((", "))", "[%]", "[^%a%d]" }
        local subjects = { "", "a", "aaa", "abc", "hello world", "(a(b)c)", "a1b2c3", "  x  ", "ab ab ab",
          "THE (quick) fox", "a.b.c", "x=1, y=22", "a\0b\0", "[]]", "%%", "aaab", "abababab", "((()))", "-a-b-",
          "cab cab", "\n\t end" }
        local inits = { 1, 2, -1, -3, 0, 4, 100, -100 }
        local repls = { "<%0>", "%1", "[%2]", "%%", "x", "%", "%a", 7 }
        local tbl = setmetatable({ a = "A", ab = false }, { __index = function(_, k) return k == "b" and 1 or nil end })
        for _ = 1, 6000 do
          local parts = {}
          for j = 1, rnd(6) do parts[j] = atoms[rnd(#atoms)] end
          local p = table.concat(parts)
          local s = subjects[rnd(#subjects)]
          local init = rnd(3) == 1 and inits[rnd(#inits)] or nil
          show(pcall(string.find, s, p, init))
          show(pcall(string.find, s, p, init, true))
          show(pcall(string.match, s, p, init))
          show(pcall(gmatchAll, s, p, init))
          show(pcall(string.gsub, s, p, repls[rnd(#repls)]))
          show(pcall(string.gsub, s, p, repls[rnd(#repls)], rnd(3) - 1))
          show(pcall(string.gsub, s, p, function(...) return select("#", ...) .. table.concat({ ... }, ":", 1, select("#", ...)) end))
          show(pcall(string.gsub, s, p, function(a) if a == "a" then return false end return a == "b" and {} or nil end))
          show(pcall(string.gsub, s, p, tbl))
          show(pcall(function() return (s):find(p) end))
        end
        show(pcall(string.gsub, "abc", "a", nil))
        show(pcall(string.find))
        show(pcall(string.find, "a", string.rep("(", 32) .. "a" .. string.rep(")", 32)))
        show(pcall(string.find, "a", string.rep("(", 33) .. "a" .. string.rep(")", 33)))
        show(pcall(string.find, string.rep("a", 300), string.rep("a?", 300) .. string.rep("a", 300)))
        return table.concat(out, "\n")
        """#

    func testMatcherGivesWhatLuasGives() throws {
        guard
            let lua54 = ["/usr/bin/lua5.4", "/usr/local/bin/lua5.4"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else {
            throw XCTSkip("lua5.4 is not installed (scripts/setup installs it)")
        }
        let ours = try LuaState(timeLimitMs: 600_000)
        guard case .string(let mine)? = try ours.run(string: PatternMatchTests.script, name: "patterns.lua").first
        else {
            return XCTFail("the script returns its output")
        }
        let reference = try runLua(lua54, PatternMatchTests.script)
        let a = mine.description.components(separatedBy: "\n"), b = reference.components(separatedBy: "\n")
        XCTAssertEqual(a.count, b.count)
        XCTAssertGreaterThan(a.count, 60_000)
        var differences = 0
        for (i, (x, y)) in zip(a, b).enumerated() where x != y {
            differences += 1
            if differences <= 5 { XCTFail("line \(i + 1): Moonflow's matcher gives\n  \(x)\nlua5.4 gives\n  \(y)") }
        }
        XCTAssertEqual(differences, 0)
    }

    func testAStateWithoutATimeLimitKeepsLuasOwnMatcher() throws {
        let lua = try LuaState()
        XCTAssertEqual(try lua.run(string: "return ('hello world'):gsub('o', '0')", name: "t"), ["hell0 w0rld", 2])
    }

    private func runLua(_ executable: String, _ source: String) throws -> String {
        // Named patterns.lua, as in the state, so that messages with a location read the same.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("patterns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data("io.write((function() \(source) end)())".utf8).write(to: dir.appendingPathComponent("patterns.lua"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["patterns.lua"]
        process.currentDirectoryURL = dir
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        return String(decoding: data, as: UTF8.self)
    }
}
