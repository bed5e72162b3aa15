import Foundation
import MoonflowHost  // LuaValue, and decoding an effect by its type, come with it
import MoonflowHostTools  // observe: the composer's effect reaches the list before `send` returns

/// A notes screen written in Lua (`plugins/notes`: an `mf.compose` of a composer and a list)
/// and driven from Swift as a SwiftUI app drives it: a `MainActorHost`, a view model
/// per part, two-way fields, and a Swift service for suggestions. `NotesExampleTests` drives
/// it; `NotesScreen` below is the SwiftUI view on Apple platforms.
///
///     let app = try NotesApp { query in "a note about \(query)" }
///     app.draft.wrappedValue = "milk"   // the composer's field reads back "milk" at once
///     app.submit()                     // the note is in the list when submit returns
@MainActor
public final class NotesApp {
    // The state, action and effect types are generated from the plugins' declarations
    // (Generated/Notes.swift: `moonflow types --swift examples/notes/plugins/notes`, through scripts/types).

    public let host: MainActorHost
    public let feature: MainActorFeature
    public let notes: MainActorViewModel<NotesState, LuaValue>
    public let composer: MainActorViewModel<ComposerState, ComposerAction>
    public let list: MainActorViewModel<ListState, ListAction>
    private var submitted: ObservationToken?

    /// The plugins this example ships (`examples/notes/plugins`, copied into the module's bundle).
    public nonisolated static var bundledPlugins: String {
        Bundle.module.resourceURL!.appendingPathComponent("plugins").path
    }

    /// - Parameters:
    ///   - plugins: the folder that holds `notes`, `composer` and `list`.
    ///   - suggest: the Swift service behind "suggest": a note for the current search.
    public init(
        plugins: String = NotesApp.bundledPlugins,
        suggest: @escaping @Sendable (String) async throws -> String
    ) throws {
        host = try MainActorHost(configuration: .init(searchPaths: [plugins]))
        host.host.register(service: "suggest") { (query: String) in try await suggest(query) }
        feature = try host.load("notes")
        notes = try feature.model(as: NotesState.self, actions: LuaValue.self)
        composer = try notes.scope("composer", as: ComposerState.self, actions: ComposerAction.self)
        list = try notes.scope("list", as: ListState.self, actions: ListAction.self)
        // A submitted note goes out of the composer as an effect; the list takes it. On the main
        // actor this runs before the `send` that submitted returns (the callback is main-actor isolated).
        submitted = feature.observe(kinds: .effect) { [weak feature] event in
            guard case .effect(let value, _) = event,
                case .submitted(let text)? = try? value.decode(as: ComposerEffect.self)
            else { return }
            try? feature?.send(case: ListAction.add(text: text))
        }
        feature.start()
    }

    /// The composer's text field.
    public var draft: ViewField<String> { composer.field(\.draft) { .write(text: $0) } }
    /// The search field.
    public var query: ViewField<String> { list.field(\.query) { .search(query: $0) } }

    /// Adds the draft to the list and empties the field (a refusal would be `composer.lastError`).
    public func submit() { composer.send(.submit) }

    /// Asks the suggestion service for a note; it arrives on a later main-actor turn.
    public func suggest() { list.send(.suggest) }
}

#if canImport(SwiftUI)
import SwiftUI

/// The notes screen in SwiftUI: the composer above the searchable list.
public struct NotesScreen: View {
    let app: NotesApp
    public init(app: NotesApp) { self.app = app }

    public var body: some View {
        VStack {
            HStack {
                TextField("New note", text: app.composer.binding(\.draft) { .write(text: $0) })
                Button("Add") { app.submit() }
            }
            TextField("Search", text: app.list.binding(\.query) { .search(query: $0) })
            List(app.list.view.shown, id: \.self) { Text($0) }
            if let error = app.notes.lastError { Text(error.message).foregroundStyle(.red) }
        }
    }
}

/// The same screen's parts with no Lua at all, for previews.
public struct NotesPreview: View {
    let list = FeatureViewModel(
        preview: ListState(notes: ["milk", "mint"], query: "mi", shown: ["milk", "mint"]), actions: ListAction.self)
    public init() {}
    public var body: some View { List(list.view.shown, id: \.self) { Text($0) } }
}
#endif
