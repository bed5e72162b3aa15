import Foundation
import LuaKit
import MoonflowHost
import NotesExample
import XCTest

/// The notes example driven as SwiftUI drives it, on the main thread (XCTest runs these tests
/// there): a field read back at every keystroke, a submit that lands in the list before it
/// returns, a search, a Swift service, every stage's error as a `FeatureError`, and a preview
/// with no Lua.
final class NotesExampleTests: XCTestCase {
    struct SuggestionsDown: Error {}

    private func app(
        _ suggest: @escaping @Sendable (String) async throws -> String = { "a note about \($0)" }
    ) throws -> NotesApp {
        try MainActor.assumeIsolated { try NotesApp(suggest: suggest) }
    }

    func testFifteenKeystrokesWithNoMainActorTurnBetweenEndWithTheExactText() throws {
        let app = try app()
        MainActor.assumeIsolated {
            let typed = "buy oat milk!!!"
            for (n, ch) in typed.enumerated() {
                app.draft.wrappedValue = app.draft.wrappedValue + String(ch)
                XCTAssertEqual(app.draft.wrappedValue, String(typed.prefix(n + 1)), "keystroke \(n + 1)")
            }
            XCTAssertEqual(typed.count, 15)
            XCTAssertEqual(app.notes.view.draft, typed, "the parent combined it too")
            XCTAssertNil(app.notes.lastError)
        }
    }

    func testASubmittedNoteIsInTheListWhenSubmitReturnsAndTheSearchFiltersIt() throws {
        let app = try app()
        MainActor.assumeIsolated {
            for note in ["oat milk", "call Ada", "Milk chocolate"] {
                app.draft.wrappedValue = note
                app.submit()
                XCTAssertEqual(app.draft.wrappedValue, "", "the field empties")
            }
            XCTAssertEqual(app.list.view.shown, ["oat milk", "call Ada", "Milk chocolate"])
            XCTAssertEqual(app.notes.view.count, 3)
            app.query.wrappedValue = "milk"
            XCTAssertEqual(app.list.view.shown, ["oat milk", "Milk chocolate"])
            XCTAssertEqual(app.notes.view.shown, ["oat milk", "Milk chocolate"])
            XCTAssertNil(app.list.lastError)
            XCTAssertNil(app.notes.lastError)
        }
    }

    func testASuggestionFromTheSwiftServiceArrivesOnTheMainActor() throws {
        let app = try app()
        MainActor.assumeIsolated {
            app.query.wrappedValue = "tea"
            app.suggest()
        }
        let deadline = Date().addingTimeInterval(5)
        while MainActor.assumeIsolated({ app.list.view.shown }).isEmpty && Date() < deadline {
            RunLoop.main.run(until: Date().addingTimeInterval(0.005))
        }
        XCTAssertEqual(MainActor.assumeIsolated { app.list.view.shown }, ["a note about tea"])
    }

    func testEveryStagesErrorArrivesAsAFeatureError() throws {
        let app = try app { _ in throw SuggestionsDown() }
        MainActor.assumeIsolated {
            // send: refused before anything runs; the view model never throws, it sets lastError
            app.composer.send(json: #"{"type":"write"}"#)
            XCTAssertEqual(app.composer.lastError?.stage, .send)
            XCTAssertTrue(
                app.composer.lastError?.message.contains("text") == true,
                "\(String(describing: app.composer.lastError))")
            // handle: submitting an empty note
            app.submit()
            XCTAssertEqual(app.composer.lastError?.stage, .handle)
            XCTAssertEqual(app.composer.lastError?.message, "nothing to submit: write a note first")
            XCTAssertTrue(
                app.composer.lastError?.location?.hasSuffix("composer/init.lua:15") == true,
                "\(String(describing: app.composer.lastError?.location))")
            // reduce: an empty note reaches the list
            app.list.send(.add(text: ""))
            XCTAssertEqual(app.list.lastError?.stage, .reduce)
            XCTAssertEqual(app.list.lastError?.message, "a note cannot be empty")
            // effect: the list's effect handler refuses a long note (the note is kept)
            app.list.send(.add(text: String(repeating: "x", count: 300)))
            XCTAssertEqual(app.list.lastError?.stage, .effect)
            XCTAssertEqual(app.list.lastError?.message, "a note of 300 characters is too long to share (280 at most)")
            XCTAssertEqual(app.list.view.shown.count, 1)
            // service: the Swift service throws
            app.suggest()
        }
        let deadline = Date().addingTimeInterval(5)
        while MainActor.assumeIsolated({ app.list.lastError?.stage }) != .service && Date() < deadline {
            RunLoop.main.run(until: Date().addingTimeInterval(0.005))
        }
        MainActor.assumeIsolated {
            XCTAssertEqual(app.list.lastError?.stage, .service)
            XCTAssertEqual(app.list.lastError?.service, "suggest")
            XCTAssertTrue(app.list.lastError?.underlying is SuggestionsDown)
        }
        // load: a plugin that does not parse
        let broken = FileManager.default.temporaryDirectory.appendingPathComponent("notes-broken-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: broken.appendingPathComponent("notes"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: broken) }
        try "return mf.compose {".write(
            to: broken.appendingPathComponent("notes/init.lua"), atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try MainActor.assumeIsolated { try NotesApp(plugins: broken.path) { $0 } }) { error in
            XCTAssertEqual((error as? FeatureError)?.stage, .load)
            XCTAssertTrue((error as? FeatureError)?.location?.hasSuffix("notes/init.lua:1") == true, "\(error)")
        }
    }

    func testAPreviewNeedsNoLua() {
        MainActor.assumeIsolated {
            let preview = FeatureViewModel(
                preview: NotesState(draft: "", shown: ["milk", "mint"], count: 2), actions: LuaValue.self)
            XCTAssertEqual(preview.view.shown, ["milk", "mint"])
            preview.send(["type": "submit"])
            XCTAssertEqual(preview.sentInPreview, [["type": "submit"]])
        }
    }
}
