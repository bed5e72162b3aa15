import Foundation
import LuaKit
import MoonflowHost
import MoonflowHostTools
import Observation
import XCTest

/// A view model over a generated state struct (a `PatchableView`) on a main-actor host: each
/// change is written into the view in place, and each top-level field is observed on its own.
/// The fixture plugin `Tests/Fixtures/plugins/views` declares a state of every shape a view
/// holds; its `step` runs a random program of writes chosen by its seed. XCTest calls the tests
/// on the main thread, not as main-actor methods: each body runs `MainActor.assumeIsolated`.
final class ViewModelPatchTests: XCTestCase {
    @MainActor
    private static func makeModel() throws -> (MainActorFeature, MainActorViewModel<ViewsState, LuaValue>) {
        let plugins = GeneratedTypesTests.root.appendingPathComponent("Tests/Fixtures/plugins").path
        let host = try MainActorHost(configuration: .init(searchPaths: [plugins], clock: .real))
        let feature = try host.load("views")
        feature.start()
        return (feature, try feature.model(as: ViewsState.self, actions: LuaValue.self))
    }

    /// After every step of random programs (set, insert, remove of fields, list items, map
    /// entries, nested and optional records, whole tables), the view patched change by change
    /// equals the state decoded afresh. Most steps go in place; those that move a record inside
    /// a list (`table.insert`, `table.remove` in the middle) are decoded whole, and equal too.
    func testAViewPatchedChangeByChangeEqualsAFreshDecodeAfterEveryStep() throws {
        try MainActor.assumeIsolated {
            let (feature, model) = try Self.makeModel()
            let steps = 3_000
            for step in 1...steps {
                model.send(["type": "step", "seed": LuaValue(step * 7_919 + 13)])
                XCTAssertNil(model.lastError)
                XCTAssertNil(model.decodingError)
                let fresh = try LuaValueDecoder().decode(ViewsState.self, from: feature.state)
                guard model.view == fresh else {
                    return XCTFail("after step \(step) the view is\n\(model.view)\nbut the state decodes to\n\(fresh)")
                }
            }
            XCTAssertGreaterThan(model.wholeDecodes, 0, "some steps move records and are decoded whole")
            XCTAssertLessThan(model.wholeDecodes, steps / 2, "most steps are patched in place")
        }
    }

    /// On a `.queue` host states reach the main actor on a later turn, many at once: the changes
    /// of all of them go into the view, in order, and none is decoded whole.
    func testChangesQueuedForTheMainActorArePatchedInOrder() throws {
        let plugins = GeneratedTypesTests.root.appendingPathComponent("Tests/Fixtures/plugins").path
        let host = try FeatureHost(configuration: .init(searchPaths: [plugins], executor: .queue))
        let feature = try host.load("views")
        feature.start()
        try MainActor.assumeIsolated {
            let model = try FeatureViewModel(feature, as: ViewsState.self, actions: LuaValue.self)
            for n in 1...120 {
                try feature.send(
                    n % 3 == 0
                        ? ["type": "title", "text": LuaValue("title \(n)")]
                        : ["type": "qty", "line": 2, "qty": LuaValue(n)])
            }
            // The main actor takes them on its next turn, which comes from the run loop: all of
            // them at once when the queue has reduced every one before.
            while !feature.isIdle { sched_yield() }
            let deadline = Date().addingTimeInterval(30)
            while model.view.title != "title 120" && Date() < deadline {
                RunLoop.main.run(until: Date().addingTimeInterval(0.01))
            }
            XCTAssertEqual(model.view, try LuaValueDecoder().decode(ViewsState.self, from: feature.state))
            XCTAssertEqual(model.view.title, "title 120")
            XCTAssertEqual(model.wholeDecodes, 0)
        }
    }

    /// One line's quantity changed: the view takes that integer alone, however long the list.
    func testAChangeToOneLineDecodesNoWholeState() throws {
        try MainActor.assumeIsolated {
            let (_, model) = try Self.makeModel()
            for n in 3...40 { model.send(["type": "step", "seed": LuaValue(n)]) }
            let before = model.wholeDecodes
            for qty in 1...50 {
                model.send(["type": "qty", "line": 1, "qty": LuaValue(qty)])
                XCTAssertEqual(model.view.items[0].qty, qty)
            }
            XCTAssertEqual(model.wholeDecodes, before)
        }
    }

    /// A body that reads `model.title` is not invalidated when only `items[1].qty` changes; one
    /// that reads `model.items`, or the whole `model.view`, is.
    func testAFieldIsObservedApartFromTheOthers() throws {
        try MainActor.assumeIsolated {
            let (_, model) = try Self.makeModel()
            let title = Fired(), items = Fired(), view = Fired()
            withObservationTracking {
                _ = model.title
            } onChange: {
                title.fire()
            }
            withObservationTracking {
                _ = model.items
            } onChange: {
                items.fire()
            }
            withObservationTracking {
                _ = model.view
            } onChange: {
                view.fire()
            }
            model.send(["type": "qty", "line": 1, "qty": 7])
            XCTAssertEqual(model.items[0].qty, 7)
            XCTAssertFalse(title.fired, "title was not written")
            XCTAssertTrue(items.fired)
            XCTAssertTrue(view.fired)

            // A two-way field reads its field as `model.title` does.
            let field = model.field(\.title) { ["type": "title", "text": LuaValue($0)] }
            let bound = Fired()
            withObservationTracking {
                _ = field.wrappedValue
            } onChange: {
                bound.fire()
            }
            model.send(["type": "qty", "line": 1, "qty": 8])
            XCTAssertFalse(bound.fired, "the field's title was not written")

            withObservationTracking {
                _ = model.title
            } onChange: {
                title.fire()
            }
            field.wrappedValue = "groceries"
            XCTAssertTrue(title.fired)
            XCTAssertEqual(model.title, "groceries")
        }
    }

    /// A write of the value a field already holds notifies no one.
    func testRewritingTheSameValueNotifiesNoOne() throws {
        try MainActor.assumeIsolated {
            let (_, model) = try Self.makeModel()
            model.send(["type": "title", "text": "same"])
            let view = Fired()
            withObservationTracking {
                _ = model.view
            } onChange: {
                view.fire()
            }
            model.send(["type": "title", "text": "same"])
            XCTAssertFalse(view.fired)
        }
    }
}

/// Whether an observation's `onChange` ran (it may be called on any thread).
private final class Fired: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var fired: Bool { lock.withLock { value } }
    func fire() { lock.withLock { value = true } }
}
