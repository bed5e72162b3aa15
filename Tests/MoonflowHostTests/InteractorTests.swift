import LuaKit
import PluginFixtures
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import XCTest

/// `mf.interactor` request interactors used through `env.interactors`, `require` of a plugin's
/// own modules, and native C modules.
final class InteractorTests: XCTestCase {
    /// A request may return its response itself; nil is an error naming the request's line.
    func testARequestReturningNilNamesItsFileAndLine() throws {
        let h = try Harness([
            "ret/init.lua": """
            local mf = require "moonflow"
            local lookup = mf.interactor {
              name = "lookup",
              requests = {
                find = function(request) return { id = request.id } end,
                lost = function(request) end,
              },
            }
            return mf.feature {
              name = "ret",
              initial = { got = "" },
              actions = { find = {}, lost = {} },
              mutations = { got = { what = "string" } },
              interactors = { lookup = lookup },
              handle = function(action, state, env)
                return env.interactors.lookup:perform { type = action.type, id = 3 }:map(function(v)
                  return { type = "got", what = tostring(v.id) }
                end)
              end,
              reduce = function(state, m) state.got = m.what return state end,
            }
            """
        ])
        try h.load("ret")
        try h.send(["type": "find"])
        XCTAssertEqual(h.state, ["got": "3"], "a plain response is the response")
        try h.send(["type": "lost"])
        let error = try XCTUnwrap(h.log.errors.first)
        XCTAssertTrue(
            error.message.contains(
                "interactor 'lookup': request 'lost' (ret/init.lua:6) returned nothing; return a stream of the response, or the response itself"
            ), error.message)
        XCTAssertEqual(error.location, "ret/init.lua:6")
    }

    static let datasource = """
        local mf = require "moonflow"
        return mf.interactor {
          name = "datasource",
          requests = {
            paginate = function(request, env)
              return mf.timer(100, { page = request.page, items = { "r" .. request.page .. "a", "r" .. request.page .. "b" } })
            end,
            broken = function(request, env)
              error("database is down")
            end,
            count = function(request, env) return #request.items end,
          },
        }
        """

    static func listPlugin(interactor: String) -> String {
        """
        local mf = require "moonflow"
        return mf.feature {
          name = "list",
          initial = { page = 0, items = {} },
          interactors = { datasource = \(interactor) },
          actions = { page = { n = "integer" }, request = { kind = "string" }, count = {} },
          mutations = { page = { page = "integer", items = "table" }, failed = { message = "string" }, counted = { n = "integer" } },
          handle = function(action, state, env)
            local ds = env.interactors.datasource
            if action.type == "page" then
              return ds:perform { type = "paginate", page = action.n }
                :map(function(r) return { type = "page", page = r.page, items = r.items } end)
            elseif action.type == "count" then
              return ds:perform { type = "count", items = { 1, 2, 3 } }:map(function(n) return { type = "counted", n = n } end)
            end
            return ds:perform { type = action.kind }
              :map(function() return { type = "failed", message = "unexpected success" } end)
              :catchError(function(e) return mf.just { type = "failed", message = e } end)
          end,
          reduce = function(state, m)
            if m.type == "page" then state.page, state.items = m.page, m.items
            elseif m.type == "counted" then state.count = m.n
            else state.error = m.message end
            return state
          end,
        }
        """
    }

    private func loaded(_ interactor: String = "require 'list.datasource'") throws -> Harness {
        let h = try Harness([
            "list/init.lua": Self.listPlugin(interactor: interactor), "list/datasource.lua": Self.datasource,
            "datasource/init.lua": Self.datasource,
        ])
        try h.load("list")
        return h
    }

    func testPerformReturnsTheResponseStream() throws {
        let h = try loaded()
        try h.send(["type": "page", "n": 2])
        h.advance(to: 500)
        XCTAssertEqual(
            Array(h.log.lines.dropFirst()),
            [
                #"0 action {"n":2,"type":"page"}"#,
                #"100 mutation#1 {"items":["r2a","r2b"],"page":2,"type":"page"}"#,
                #"100 state#1 {"items":["r2a","r2b"],"page":2}"#,
            ])
    }

    func testARequestHandlerMayReturnAPlainValue() throws {
        let h = try loaded()
        try h.send(["type": "count"])
        XCTAssertEqual(h.state["count"], 3)
    }

    func testAnInteractorNamedByItsPlugin() throws {
        let h = try loaded("'datasource'")
        try h.send(["type": "page", "n": 5])
        h.advance(to: 500)
        XCTAssertEqual(h.state, ["page": 5, "items": ["r5a", "r5b"]])
    }

    func testAnUnknownRequestTypeFailsNamingTheHandledTypes() throws {
        let h = try loaded()
        try h.send(["type": "request", "kind": "delete"])
        XCTAssertEqual(
            h.state["error"], "interactor 'datasource' has no request 'delete'; it handles: broken, count, paginate")
        XCTAssertEqual(
            h.log.logs.map(\.message),
            [
                "interactor 'datasource' request 'delete' failed: interactor 'datasource' has no request 'delete'; it handles: broken, count, paginate"
            ])
    }

    func testAFailingRequestIsLoggedWithItsLocation() throws {
        let h = try loaded()
        try h.send(["type": "request", "kind": "broken"])
        let file = h.path("list/datasource.lua")
        XCTAssertEqual(h.state["error"]?.stringValue, "\(file):9: database is down")
        let logs = h.log.logs
        XCTAssertEqual(logs.count, 1)
        XCTAssertEqual(logs.first?.location, "\(file):9")
        XCTAssertTrue(
            logs.first?.message.hasPrefix(
                "interactor 'datasource' request 'broken' failed: \(file):9: database is down") == true, "\(logs)")
    }

    func testAFeatureCannotBeLoadedAsAnInteractorNorTheReverse() throws {
        let h = try Harness([
            "datasource/init.lua": Self.datasource, "list/init.lua": Self.listPlugin(interactor: "'list'"),
        ])
        XCTAssertThrowsError(try h.host.load("datasource")) { error in
            XCTAssertEqual(
                ((error as? FeatureError)?.underlying as? HostError)?.message,
                "\(h.path("datasource/init.lua")) defines an mf.interactor, not a feature: features use it through env.interactors"
            )
        }
        XCTAssertThrowsError(try h.host.load("list")) { error in
            XCTAssertEqual(
                ((error as? FeatureError)?.underlying as? HostError)?.message,
                "interactors.datasource: plugin 'list' is not an mf.interactor")
        }
    }

    // MARK: require and native modules

    func testRequireFindsModulesInThePluginFolder() throws {
        let h = try Harness([
            "probe/init.lua": Probe.source(
                "return mf.just(util.shout('hi') .. ' ' .. deep.answer)",
                header: "local util = require 'probe.util'\nlocal deep = require 'probe.lib.deep'"),
            "probe/util.lua": "local M = {}\nfunction M.shout(s) return s:upper() .. '!' end\nreturn M",
            "probe/lib/deep.lua": "return { answer = 42 }",
        ])
        try h.load()
        try h.send(["type": "go"])
        XCTAssertEqual(h.log.values, ["0:HI! 42", "0:|"])
    }

    func testANativeCModuleWorksInAFeature() throws {
        let h = try Harness([
            "probe/init.lua": Probe.source(
                """
                local decoded = cjson.decode('{"a":[1,2,3],"b":"x"}')
                return mf.just(cjson.encode({ sum = decoded.a[1] + decoded.a[2] + decoded.a[3], b = decoded.b }))
                """, header: "local cjson = require 'cjson'")
        ])
        try h.load()
        try h.send(["type": "go"])
        XCTAssertEqual(h.log.values.count, 2)
        let json = try LuaValue(json: String(h.log.values[0].dropFirst(2)))
        XCTAssertEqual(json, ["sum": 6, "b": "x"])
    }
}
