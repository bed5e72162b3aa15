import LuaKit
import MoonflowHost
import MoonflowLua
import XCTest

/// What the host says when a plugin file is not a definition: a `FeatureError` of stage
/// `.load`, with the host's message in `underlying`.
final class PluginLoadTests: XCTestCase {
    func testAPluginMustReturnADefinition() throws {
        let h = try Harness([
            "none/init.lua": "local x = 1",
            "plain/init.lua": "return { name = 'p', initial = {}, actions = {}, mutations = {}, handle = print }",
        ])
        XCTAssertThrowsError(try h.load("none")) { error in
            XCTAssertEqual((error as? FeatureError)?.stage, .load)
            XCTAssertEqual(
                ((error as? FeatureError)?.underlying as? HostError)?.message,
                "\(h.path("none/init.lua")) must return a definition (return mf.feature{...}); it returned nothing")
        }
        XCTAssertThrowsError(try h.load("plain")) { error in
            XCTAssertEqual(
                ((error as? FeatureError)?.underlying as? HostError)?.message,
                "\(h.path("plain/init.lua")): mf.feature 'p': field 'reduce' must be a function (got nil)")
        }
    }
}
