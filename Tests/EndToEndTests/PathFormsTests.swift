import Foundation
import XCTest

/// Every command takes every form of a path to a plugin with the same result: `.`, `./`,
/// `..`, a trailing slash, `./init.lua`, `init.lua`, a symbolic link, absolute, and a name
/// in `./plugins`; and every other path a user gives (`--record`, `-o`, a recording's own
/// path) may be one character long. Foundation's `deletingLastPathComponent` trapped on a
/// one-character path, so `moonflow check .` inside a plugin folder died with SIGILL.
final class PathFormsTests: ScratchTestCase {
    /// A plugin `shop` that requires a module of its own by its plugin name, with a spec that
    /// loads it by name, and a sibling `other` it does not need.
    private func writeShop() throws {
        try write(
            "plugins/shop/init.lua",
            """
            local mf = require "moonflow"
            local prices = require "shop.prices"
            return mf.feature {
              name = "shop",
              initial = { total = 0 },
              state = { total = "integer" },
              actions = { add = { sku = "string" } },
              mutations = { added = { price = "integer" } },
              handle = function(action) return { type = "added", price = prices[action.sku] or 0 } end,
              reduce = function(state, m) state.total = state.total + m.price; return state end,
            }
            """)
        try write("plugins/shop/prices.lua", "return { tea = 3, cake = 5 }\n")
        try write(
            "plugins/shop/spec/shop_spec.lua",
            """
            local test = require "moonflow.test"
            describe("shop", function()
              it("adds the price of what is added", function()
                local store = test.store("shop")
                store:send({ type = "add", sku = "tea" }, function(s) s.total = 3 end)
              end)
            end)
            """)
        try write(
            "plugins/other/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature { name = "other", initial = { n = 0 }, actions = {}, mutations = {},
              handle = function() end, reduce = function(s) return s end }
            """)
        try FileManager.default.createDirectory(
            at: scratch.appendingPathComponent("links"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: scratch.appendingPathComponent("links/shop").path,
            withDestinationPath: "../plugins/shop")
    }

    /// (folder to run in, relative to the scratch folder; the path given there)
    private var forms: [(String, String)] {
        let absolute = scratch.appendingPathComponent("plugins/shop").path
        return [
            (".", "plugins/shop"), (".", "plugins/shop/"), (".", "./plugins/shop"), (".", "shop"),
            (".", "links/shop"), (".", "plugins/shop/init.lua"), (".", absolute), (".", absolute + "/"),
            ("plugins/shop", "."), ("plugins/shop", "./"), ("plugins/shop", "./init.lua"),
            ("plugins/shop", "init.lua"), ("plugins/shop/spec", ".."), ("plugins/shop/spec", "../"),
            ("plugins", "shop"), ("plugins", "./shop/"), ("links", "shop"),
        ]
    }

    func testCheckRunAndTypesTakeEveryFormOfAPluginPath() throws {
        try writeShop()
        var firstRun: String?
        for (folder, path) in forms {
            let here = scratch.appendingPathComponent(folder)
            let label = "in \(folder): \(path)"
            for check in [["check", path], ["check", "--sandbox", path]] {
                let result = try Moonflow.run(check, in: here)
                XCTAssertEqual(result.status, 0, "moonflow \(check.joined(separator: " ")) \(label): \(result.stderr)")
                XCTAssertEqual(result.stdout, "\(path): ok\n", label)
            }
            let run = try Moonflow.run(
                ["run", path, "--clock", "virtual", "--format", "jsonl", "--actions", "-"], in: here,
                input: "{\"type\":\"add\",\"sku\":\"tea\"}\n{\"type\":\"add\",\"sku\":\"cake\"}\n")
            XCTAssertEqual(run.status, 0, "moonflow run \(label): \(run.stderr)")
            XCTAssertTrue(run.stdout.contains("\"state\":{\"total\":8}"), "\(label): \(run.stdout)")
            if let firstRun { XCTAssertEqual(run.stdout, firstRun, "the same run whatever the path's form (\(label))") }
            firstRun = firstRun ?? run.stdout
            let types = try Moonflow.run(["types", "--lua", path], in: here)
            XCTAssertEqual(types.status, 0, "moonflow types --lua \(label): \(types.stderr)")
            XCTAssertTrue(types.stdout.contains("total = \"integer\""), "\(label): \(types.stdout)")
            let swift = try Moonflow.run(["types", "--swift", path], in: here)
            XCTAssertTrue(swift.stdout.contains("struct ShopState"), "moonflow types --swift \(label): \(swift.stderr)")
        }
    }

    func testSpecsRunFromInsideThePluginFolderInEveryForm() throws {
        try writeShop()
        for (folder, path) in [
            ("plugins/shop", "spec"), ("plugins/shop", "."), ("plugins/shop", "./"),
            ("plugins/shop", "spec/shop_spec.lua"), ("plugins/shop/spec", "."),
            ("plugins/shop/spec", "shop_spec.lua"), ("plugins/shop/spec", ".."),
            ("plugins", "shop"), (".", "plugins/shop/"), (".", "links/shop"),
        ] {
            let result = try Moonflow.run(["test", path], in: scratch.appendingPathComponent(folder))
            XCTAssertEqual(result.status, 0, "moonflow test \(path) in \(folder): \(result.stdout)\(result.stderr)")
            XCTAssertTrue(
                result.stdout.contains("1 passed, 0 failed"), "moonflow test \(path) in \(folder): \(result.stdout)")
        }
    }

    func testOneCharacterPathsForRecordingsOutputsAndReplays() throws {
        try writeShop()
        let shop = scratch.appendingPathComponent("plugins/shop")
        // --record to a file named with one character, beside the plugin, recorded as ".".
        let record = try Moonflow.run(
            ["run", ".", "--clock", "virtual", "--actions", "-", "--record", "r"], in: shop,
            input: "{\"type\":\"add\",\"sku\":\"cake\"}\n")
        XCTAssertEqual(record.status, 0, record.stderr)
        let header =
            try String(contentsOf: shop.appendingPathComponent("r"), encoding: .utf8).split(separator: "\n").first ?? ""
        XCTAssertTrue(header.contains("\"path\":\".\""), String(header))
        let replay = try Moonflow.run(["replay", "r"], in: shop)
        XCTAssertEqual(replay.status, 0, replay.stdout + replay.stderr)
        XCTAssertTrue(replay.stdout.contains("identical (1 inputs"), replay.stdout)
        // -o to a file named with one character.
        let types = try Moonflow.run(["types", "--swift", ".", "-o", "t"], in: shop)
        XCTAssertEqual(types.status, 0, types.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: shop.appendingPathComponent("t").path))
        // A one-character plugin file and a one-character folder.
        try write(
            "a",
            "local mf = require 'moonflow'\nreturn mf.feature { name = 'a', initial = {}, actions = {}, mutations = {}, handle = function() end, reduce = function(s) return s end }\n"
        )
        let file = try Moonflow.run(["check", "a"], in: scratch)
        XCTAssertNotEqual(file.status, 132, "no trap: \(file.stderr)")
        XCTAssertTrue(file.status == 0 || file.stderr.contains("a"), file.stderr)
    }
}
