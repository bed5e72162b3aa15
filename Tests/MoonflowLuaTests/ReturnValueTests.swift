import LuaKit
import MoonflowLua
import XCTest

/// What a script's functions return is never silently dropped: a Lua service may return a
/// plain value (taken as `mf.just(value)`), and nil where a stream is needed is an error
/// naming the function's `file:line` and what to return (a request interactor's: InteractorTests).
final class ReturnValueTests: XCTestCase {
    static let plugin = """
        local mf = require "moonflow"
        return mf.feature {
          name = "ret",
          initial = { got = "" },
          actions = { plain = {}, missing = {} },
          mutations = { got = { what = "string" } },
          services = {
            table = function(id) return { id = id } end,
            none = function() end,
          },
          handle = function(action, state, env)
            local got = function(v) return { type = "got", what = tostring(v.id) } end
            if action.type == "plain" then return env.services.table(7):map(got) end
            return env.services.none():map(got)
          end,
          reduce = function(state, m) state.got = m.what return state end,
        }
        """

    private func loaded() throws -> Harness {
        let h = try Harness(["ret/init.lua": Self.plugin])
        try h.load("ret")
        return h
    }

    func testAServiceReturningAPlainValueIsAStreamOfIt() throws {
        let h = try loaded()
        try h.send(["type": "plain"])
        XCTAssertEqual(h.state, ["got": "7"])
        XCTAssertTrue(h.log.errors.isEmpty, "\(h.log.lines)")
    }

    func testAServiceReturningNilNamesItsFileAndLine() throws {
        let h = try loaded()
        try h.send(["type": "missing"])
        let error = try XCTUnwrap(h.log.errors.first)
        // Raised where the service was called (line 14), naming where it is defined (line 9).
        XCTAssertTrue(
            error.message.hasPrefix(
                "\(h.path("ret/init.lua")):14: service 'none' (\(h.path("ret/init.lua")):9) returned nothing; return a stream, or a value (taken as mf.just(value))"
            ), error.message)
        XCTAssertEqual(error.location, h.path("ret/init.lua") + ":14")
        XCTAssertEqual(h.state, ["got": ""])
    }
}

/// Errors with no line of their own name the function involved (item: `handle` returning a number).
final class FunctionLocationTests: XCTestCase {
    func testHandleReturningANumberNamesHandlesLine() throws {
        let h = try Harness([
            "num/init.lua": """
            local mf = require "moonflow"
            return mf.feature {
              name = "num", initial = {}, actions = { go = {} }, mutations = {},
              reduce = function(s) return s end,
              handle = function()
                return 42
              end,
            }
            """
        ])
        try h.load("num")
        try h.send(["type": "go"])
        let error = try XCTUnwrap(h.log.errors.first)
        XCTAssertEqual(error.message, "num.handle must return nothing, a mutation table or a stream (got number)")
        XCTAssertEqual(error.location, h.path("num/init.lua") + ":5")
    }
}
