import Foundation
@testable import MoonflowRun
import XCTest

/// `StuckWatch.run` returns once its body ended, with what the body held already let go:
/// `moonflow test` exits right after its last spec file, and a host still being torn down
/// on the body's thread then was reported as leaked (LintTests under the address sanitizer).
final class StuckWatchTests: XCTestCase {
    private final class Held: @unchecked Sendable {}

    func testWhatTheBodyHeldIsReleasedBeforeRunReturns() {
        for round in 0..<50 {
            weak var weakHeld: Held?
            let ended: Bool = {
                let held = Held()
                weakHeld = held
                return StuckWatch.run(isStuck: { false }) { _ = held }
            }()
            XCTAssertTrue(ended)
            XCTAssertNil(weakHeld, "round \(round): the body's captures outlived run")
        }
    }
}
