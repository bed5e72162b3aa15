import Streams
import StreamsTesting
import XCTest

/// A failure that compares by identity number, so marble tests can assert which error arrived.
struct TestError: Error, Equatable, CustomStringConvertible {
    let id: Int
    var description: String { "TestError(\(id))" }
}

let testError = TestError(id: 0)
let testError1 = TestError(id: 1)
let testError2 = TestError(id: 2)

typealias Sub = SubscriptionInterval
