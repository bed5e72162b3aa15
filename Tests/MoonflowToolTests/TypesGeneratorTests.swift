import LuaKit
import MoonflowLua
import MoonflowTool
import XCTest

/// What `moonflow types --swift` and `--luals` make of names and types that Swift or LuaLS
/// cannot take as they are (the example plugins' files are compiled in GeneratedTypesTests).
final class TypesGeneratorTests: XCTestCase {
    private func feature(_ state: SchemaType, actions: [String: [String: Schema.Field]] = [:],
                         outputs: [String: [String: Schema.Field]]? = nil) -> [FeatureDeclarations] {
        [FeatureDeclarations(name: "to-do", kind: .feature, state: state, stateIsInferred: false, actions: actions, outputs: outputs)]
    }

    func testLuaNamesBecomeSwiftNamesWithTheLuaKeyKept() {
        let state = SchemaType.record([
            .init(name: "a b", type: .scalar(.string)),
            .init(name: "default", type: .scalar(.integer)),
            .init(name: "is_done", type: .scalar(.boolean)),
            .init(name: "self", type: .optional(.scalar(.number))),
            .init(name: "status", type: .enumeration(["in-progress", "done"])),
        ])
        let swift = SwiftTypesGenerator(features: feature(state), command: "moonflow types --swift x").source()
        XCTAssertTrue(swift.contains("public struct ToDoState: Codable, Equatable, Sendable {"), swift)
        XCTAssertTrue(swift.contains("public var `default`: Int"), swift)
        XCTAssertTrue(swift.contains("public var isDone: Bool"), swift)
        XCTAssertTrue(swift.contains("public var self_: Double?"), swift)
        XCTAssertTrue(swift.contains("case aB = \"a b\""), swift)
        XCTAssertTrue(swift.contains("case isDone = \"is_done\""), swift)
        XCTAssertTrue(swift.contains("case self_ = \"self\""), swift)
        XCTAssertTrue(swift.contains("case inProgress = \"in-progress\""), swift)
    }

    func testActionsEncodeTheirLuaNamesAndFields() {
        let swift = SwiftTypesGenerator(
            features: feature(.record([]), actions: ["open-post": ["post_id": .init(type: .integer, optional: true)]]),
            command: "moonflow types --swift x").source()
        XCTAssertTrue(swift.contains("case openPost(postId: Int? = nil)"), swift)
        XCTAssertTrue(swift.contains("try container.encode(\"open-post\", forKey: Key(\"type\"))"), swift)
        XCTAssertTrue(swift.contains("try container.encodeIfPresent(v0, forKey: Key(\"post_id\"))"), swift)
        XCTAssertFalse(swift.contains("ToDoEffect"), "no outputs declared, no effect type")
    }

    func testLuaLSTypesForListsMapsEnumsAndOptionals() {
        let state = SchemaType.record([
            .init(name: "items", type: .list(.record([.init(name: "id", type: .scalar(.integer))]))),
            .init(name: "byName", type: .map(.scalar(.number))),
            .init(name: "mode", type: .optional(.enumeration(["idle", "busy"]))),
            .init(name: "tags", type: .list(.enumeration(["a", "b"]))),
        ])
        let luals = LuaLSAnnotations(features: feature(state, outputs: ["done": [:]]), command: "moonflow types --luals x").source()
        XCTAssertTrue(luals.hasPrefix("---@meta\n"), luals)
        XCTAssertTrue(luals.contains("---@field items ToDoState.items.item[]\n"), luals)
        XCTAssertTrue(luals.contains("---@class ToDoState.items.item\n---@field id integer\n"), luals)
        XCTAssertTrue(luals.contains("---@field byName table<string, number>\n"), luals)
        XCTAssertTrue(luals.contains("---@field mode? \"idle\"|\"busy\"\n"), luals)
        XCTAssertTrue(luals.contains("---@field tags (\"a\"|\"b\")[]\n"), luals)
        XCTAssertTrue(luals.contains("---@class ToDoEffect.done\n---@field type \"done\"\n---@alias ToDoEffect ToDoEffect.done\n"), luals)
    }
}
