import Foundation
import XCTest

/// `moonflow check` lists every problem in one pass, each at its own key's line,
/// with did-you-mean for names and for enum-like values.
final class CheckAllAtOnceTests: ScratchTestCase {
    func testADozenTyposAreAllReportedAtTheirLines() throws {
        try write(
            "plugins/chat/init.lua",
            """
            local mf = require "moonflow"

            return mf.feature {
              name = "chat",
              initial = { messages = {} },
              actions = {
                send = { text = "str" },
                load = { page = "int" },
                open = {},
              },
              mutations = {
                sent = { text = "string" },
                loaded = { items = "tabel" },
              },
              toggle = "id",
              strategy = {
                load = "lastest",
                ad = "merge",
              },
              handle = function() return { type = "sent", text = "x" } end,
              reduce = function(state) return state end,
              effect = {},
            }
            """)
        let result = try Moonflow.run(["check", "plugins/chat"], in: scratch)
        XCTAssertEqual(result.status, 1)
        let lines = (result.stdout + result.stderr).split(separator: "\n").map(String.init)
        let at = "plugins/chat/init.lua"
        XCTAssertEqual(
            lines,
            [
                "\(at):7: mf.feature 'chat': action 'send': field 'text' has unknown type \"str\" (did you mean \"string\"? use string, integer, number, boolean, table or any, with ? for optional)",
                "\(at):8: mf.feature 'chat': action 'load': field 'page' has unknown type \"int\" (did you mean \"integer\"? use string, integer, number, boolean, table or any, with ? for optional)",
                "\(at):13: mf.feature 'chat': mutation 'loaded': field 'items' has unknown type \"tabel\" (did you mean \"table\"? use string, integer, number, boolean, table or any, with ? for optional)",
                "\(at):15: mf.feature 'chat': unknown field 'toggle'; mf.feature takes name, version, initial, state, actions, mutations, outputs, handle, reduce, effects, strategy, services, interactors, repositories, migrate, invariants",
                "\(at):17: mf.feature 'chat': strategy entries are action = \"merge\" | \"latest\" | \"concat\" | \"exhaust\" (got [\"load\"] = \"lastest\"); did you mean \"latest\"?",
                "\(at):18: mf.feature 'chat': strategy names undeclared action 'ad'; declared actions: load, open, send",
                "\(at):22: mf.feature 'chat': unknown field 'effect'; did you mean `effects`?",
            ], result.stdout + result.stderr)
    }
}
