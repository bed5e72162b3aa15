import Runtime
import Streams
import StreamsTesting
import XCTest

/// Seed 001's form: text-field children whose states fold into the form's validity, added and
/// removed at run time.
final class CompositionTests: XCTestCase {
    enum FieldAction: Sendable, Equatable { case edit(String), submit }
    enum FieldMutation: Sendable, Equatable { case text(String), checked(Bool), submitted }
    enum FieldEffect: Sendable, Equatable { case check(String), done(String) }
    struct FieldState: Sendable, Equatable {
        var text = ""
        var isValid = false
        var isAvailable: Bool?
    }

    enum FormAction: Sendable, Equatable { case edit(field: String, text: String), submit(field: String), unknown }
    struct FormState: Sendable, Equatable {
        var isValid: Bool
        var fields: [String]
    }

    typealias Form = Composite<FormAction, FormState, FieldAction, FieldState, FieldEffect>

    /// A field: valid when non-empty; each edit starts an availability check (an internal effect,
    /// 100 ms); submitting sends an outward `done` effect.
    private func makeField(scheduler: TestScheduler) -> Form.Child {
        AnyChild(Interactor<FieldState, FieldAction, FieldMutation, FieldEffect>(
            initial: FieldState(),
            strategy: { _ in .latest },
            handle: { action, _ in
                switch action {
                case .edit(let text): .one(.text(text))
                case .submit: .one(.submitted)
                }
            },
            reduce: { state, mutation in
                switch mutation {
                case .text(let text):
                    state.text = text
                    state.isValid = !text.isEmpty
                    state.isAvailable = nil
                    return .check(text)
                case .checked(let available):
                    state.isAvailable = available
                case .submitted:
                    return .done(state.text)
                }
                return nil
            },
            effects: { effect, _ in
                guard case .check(let text) = effect else { return nil }
                return .timer(100, .checked(text != "taken"), on: scheduler)
            }))
    }

    private func makeForm(scheduler: TestScheduler, names: [String]) -> Form {
        Form(
            children: names.map { ($0, makeField(scheduler: scheduler)) },
            route: { action in
                switch action {
                case .edit(let field, let text): (field, .edit(text))
                case .submit(let field): (field, .submit)
                case .unknown: nil
                }
            },
            combine: { fields in
                FormState(isValid: fields.values.allSatisfy(\.isValid), fields: fields.keys.sorted())
            })
    }

    func testChildStatesFoldIntoTheParentState() {
        let scheduler = TestScheduler()
        let form = makeForm(scheduler: scheduler, names: ["name", "email"])
        XCTAssertEqual(form.state.value, FormState(isValid: false, fields: ["email", "name"]))
        form.send(.edit(field: "name", text: "Ada"))
        XCTAssertFalse(form.state.value.isValid)
        form.send(.edit(field: "email", text: "ada@example.com"))
        XCTAssertTrue(form.state.value.isValid)
    }

    func testChildrenCanBeAddedAndRemovedAtRunTime() {
        let scheduler = TestScheduler()
        let form = makeForm(scheduler: scheduler, names: ["name"])
        form.send(.edit(field: "name", text: "Ada"))
        XCTAssertTrue(form.state.value.isValid)
        form.add("phone", makeField(scheduler: scheduler))
        XCTAssertEqual(form.childNames, ["name", "phone"])
        XCTAssertEqual(form.state.value, FormState(isValid: false, fields: ["name", "phone"]))
        form.remove("phone")
        XCTAssertEqual(form.state.value, FormState(isValid: true, fields: ["name"]))
        form.send(.edit(field: "phone", text: "555"))
        XCTAssertEqual(form.state.value, FormState(isValid: true, fields: ["name"]), "a removed child gets nothing")
    }

    func testRemovingAChildCancelsItsEffects() {
        let scheduler = TestScheduler()
        let form = makeForm(scheduler: scheduler, names: ["name", "email"])
        let email = form.child("email")
        form.send(.edit(field: "name", text: "Ada"))
        form.send(.edit(field: "email", text: "taken"))
        XCTAssertEqual(form.inFlight.map(\.child), ["name", "email"])
        form.remove("email")
        XCTAssertEqual(form.inFlight.map(\.child), ["name"])
        XCTAssertEqual(email?.inFlight, [], "the removed child's availability check was cancelled")
        scheduler.advance(by: 100)
        XCTAssertEqual(form.child("name")?.state.value.isAvailable, true)
        XCTAssertNil(email?.state.value.isAvailable)
    }

    func testChildEffectsGoOutTaggedWithTheChildsName() {
        let scheduler = TestScheduler()
        let form = makeForm(scheduler: scheduler, names: ["name", "email"])
        let effects = Recording(form.effects)
        form.send(.edit(field: "email", text: "a@b.c"))
        form.send(.submit(field: "email"))
        XCTAssertEqual(effects.values.map(\.child), ["email"])
        XCTAssertEqual(effects.values.map(\.value), [.done("a@b.c")])
    }

    func testMapEffectReplacesOrDropsChildEffects() {
        let scheduler = TestScheduler()
        let form = Form(
            children: [("a", makeField(scheduler: scheduler)), ("b", makeField(scheduler: scheduler))],
            route: { action in if case .submit(let field) = action { (field, .submit) } else { nil } },
            combine: { FormState(isValid: $0.values.allSatisfy(\.isValid), fields: $0.keys.sorted()) },
            mapEffect: { child, effect in child == "b" ? nil : .done("from \(child)") })
        let effects = Recording(form.effects)
        form.send(.submit(field: "a"))
        form.send(.submit(field: "b"))
        XCTAssertEqual(effects.values.map(\.value), [.done("from a")])
    }

    func testUnroutedActionsAndMissingChildrenAreReportedByName() {
        let scheduler = TestScheduler()
        let form = makeForm(scheduler: scheduler, names: ["name"])
        let errors = Recording(form.errors)
        form.send(.unknown)
        form.send(.edit(field: "zip", text: "1"))
        XCTAssertEqual(errors.values.map(\.description), [
            "no child takes action unknown; extend `route`",
            "action edit(field: \"zip\", text: \"1\") routed to child \"zip\", which is not there or refused it",
        ])
    }

    func testClosureChildrenComposeLikeInteractors() {
        // The Lua bridge builds children from closures; a plain property-backed child works the same.
        let value = MutableProperty(FieldState(text: "x", isValid: true))
        let sent = Box<[FieldAction]>([])
        let child = Form.Child(
            send: { action in sent.mutate { $0.append(action) }; return true },
            state: Property(value))
        let form = Form(children: [("lua", child)], route: { _ in ("lua", .submit) }, combine: {
            FormState(isValid: $0.values.allSatisfy(\.isValid), fields: $0.keys.sorted())
        })
        form.send(.unknown)
        XCTAssertEqual(sent.value, [.submit])
        XCTAssertTrue(form.state.value.isValid)
        value.value = FieldState()
        XCTAssertFalse(form.state.value.isValid)
    }
}
