import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import MoonflowLua
import PluginFixtures
import Streams
import XCTest

/// `FeatureViewModel` as a SwiftUI store: a composite's child as a model of its own, and a
/// preview with no Lua at all. (XCTest runs these tests on the main thread.)
final class ViewModelStoreTests: XCTestCase {
    static let plugins = [
        "composer/init.lua": """
        local mf = require "moonflow"
        return mf.feature {
          name = "composer", initial = { draft = "" },
          actions = { write = { text = "string" } }, mutations = { draft = { text = "string" } },
          handle = function(a) return { type = "draft", text = a.text } end,
          reduce = function(s, m) s.draft = m.text; return s end,
        }
        """,
        "chat/init.lua": """
        local mf = require "moonflow"
        return mf.compose {
          name = "chat", children = { composer = "composer" },
          route = function(action) return "composer", action end,
          combine = function(states) return { draft = states.composer.draft } end,
        }
        """,
    ]

    struct ComposerView: Decodable, Sendable, Equatable { let draft: String }
    enum ComposerAction: Encodable, Equatable, Sendable { case write(text: String) }

    func testAScopeIsTheChildsOwnModel() throws {
        let folder = try PluginFolder(Self.plugins)
        let host = try FeatureHost(configuration: .init(searchPaths: [folder.dir], executor: .mainActor))
        let chat = try host.load("chat")
        chat.start()
        try MainActor.assumeIsolated {
            let model = try FeatureViewModel(chat, as: ComposerView.self, actions: LuaValue.self)
            let composer = try model.scope("composer", as: ComposerView.self, actions: ComposerAction.self)
            composer.send(.write(text: "hi"))
            XCTAssertEqual(composer.view, ComposerView(draft: "hi"), "the child's state, at once on the main actor")
            XCTAssertEqual(model.view, ComposerView(draft: "hi"), "the parent combined it")
            XCTAssertThrowsError(try model.scope("sidebar", as: ComposerView.self, actions: LuaValue.self)) { error in
                XCTAssertEqual(
                    (error as? FeatureError)?.message,
                    "scope(\"sidebar\"): chat has no child 'sidebar'; its children: composer")
            }
            XCTAssertThrowsError(try composer.scope("x", as: ComposerView.self, actions: LuaValue.self)) { error in
                XCTAssertEqual(
                    (error as? FeatureError)?.message,
                    "scope(\"x\"): composer is not an mf.compose; only a composition has children")
            }
            // A view that does not fit is a FeatureError too, naming the place as decodingError
            // does (before: a raw DecodingError from init and from scope).
            struct Wrong: Decodable, Sendable { let draft: Int }
            for attempt in [
                { _ = try FeatureViewModel(chat, as: Wrong.self, actions: LuaValue.self) },
                { _ = try model.scope("composer", as: Wrong.self, actions: LuaValue.self) },
            ] {
                XCTAssertThrowsError(try attempt()) { error in
                    let failure = error as? FeatureError
                    XCTAssertEqual(failure?.stage, .view, "\(error)")
                    XCTAssertTrue(
                        failure?.message.hasPrefix(
                            "the state does not decode into Wrong: state.draft: expected an integer (Int), found a string"
                        ) == true, "\(error)")
                    XCTAssertTrue(failure?.underlying is DecodingError)
                }
            }
        }
    }

    func testARestartWithNoActionYetShowsTheNewInitialState() throws {
        let host = try FeatureHost(configuration: .init(searchPaths: [], executor: .mainActor))
        let source = { @Sendable (draft: String) in
            Self.plugins["composer/init.lua"]!.replacingOccurrences(
                of: #"initial = { draft = "" }"#, with: #"initial = { draft = "\#(draft)" }"#)
        }
        let composer = try host.load(name: "composer", source: source("first"))
        composer.start()
        try MainActor.assumeIsolated {
            let model = try FeatureViewModel(composer, as: ComposerView.self, actions: LuaValue.self)
            XCTAssertEqual(model.view, ComposerView(draft: "first"))
            // No mutation was reduced yet: the restarted state comes with the seq the first had.
            host.memory.set("composer/init.lua", source("second"))
            try host.restart(composer)
            XCTAssertEqual(model.view, ComposerView(draft: "second"), "the view shows the restarted state")
        }
    }

    /// A feature whose state changes between the view model's first read of it and the start
    /// of its listener: what a queue host may do while the model is being made.
    private final class ChangingFeature: FeatureInternals, @unchecked Sendable {
        let outlet = EventOutlet()
        private let reads = Locked(0)
        var name: String { "changing" }
        var source: String { "changing" }
        var state: LuaValue {
            reads.withLock {
                $0 += 1; return $0 == 1 ? ["draft": "before"] : ["draft": "after"]
            }
        }
        var isIdle: Bool { true }
        func start() {}
        func send(_ action: LuaValue) throws {}
        func cancel(actionType: String?) {}
        var effectSource: String? {
            get { nil }
            set {}
        }
        var eventCause: LuaValue? { nil }
        var inFlight: [FeatureFlight] { [] }
        var liveCancellableIDs: [String] { [] }
        var eventError: FeatureError? { nil }
        func dispose() {}
        var isDisposed: Bool { false }
    }

    func testAStateDeliveredWhileTheModelIsMadeIsNotMissed() throws {
        try MainActor.assumeIsolated {
            let model = try FeatureViewModel(ChangingFeature(), as: ComposerView.self, actions: LuaValue.self)
            XCTAssertEqual(model.view, ComposerView(draft: "after"))
        }
    }

    func testAPreviewRunsNoLuaAndRecordsWhatItIsSent() throws {
        MainActor.assumeIsolated {
            let model = MainActorViewModel(preview: ComposerView(draft: "preview"), actions: ComposerAction.self)
            let draft = model.field(\.draft) { .write(text: $0) }
            draft.wrappedValue = "typed"
            XCTAssertEqual(model.view, ComposerView(draft: "preview"), "a preview's view stays as given")
            XCTAssertEqual(model.sentInPreview, [.write(text: "typed")])
            XCTAssertNil(model.lastError)
        }
    }
}
