import Foundation
import MoonflowHost
import MoonflowHostTools
import LuaKit
import MoonflowLua
import XCTest

/// `host.connect(devServer:)` when there is nothing to connect to: what the app's developer
/// reads (the whole link with a real `moonflow serve` is in MoonflowServeTests' ServeTests).
final class DevServerLinkTests: XCTestCase {
    func testAURLThatIsNotOneServePrintsIsRefusedSayingWhatToGive() throws {
        let host = try FeatureHost(configuration: .init(searchPaths: []))
        for text in ["http://127.0.0.1:8377/", "ws://127.0.0.1:8377/?token=abc", "http://127.0.0.1/?token=abc"] {
            XCTAssertThrowsError(try host.connect(devServer: URL(string: text)!, timeout: 1), text) { error in
                XCTAssertTrue(
                    "\(error)".contains("give the URL moonflow serve printed (http://HOST:PORT/?token=…)"), "\(error)")
            }
        }
    }

    /// The app's call: `try await host.connect(devServer:)` with the text serve printed. Nothing
    /// listening fails at once, whatever the timeout (before: it retried for the whole timeout,
    /// 10 s by default, holding the caller), and a text that is no URL says what to give.
    func testConnectingFromATaskFailsAtOnceWhenNothingListens() async throws {
        let port = try freePort()
        let host = try FeatureHost(configuration: .init(searchPaths: []))
        let failed = expectation(description: "connect failed")
        let attempt = Task {
            do {
                _ = try await host.connect(devServer: "http://127.0.0.1:\(port)/?token=abc", timeout: 600)
                XCTFail("connected to nothing")
            } catch {
                XCTAssertTrue("\(error)".contains("nothing listens at 127.0.0.1:\(port)"), "\(error)")
                XCTAssertFalse("\(error)".contains("abc"), "\(error)")
            }
            failed.fulfill()
        }
        await fulfillment(of: [failed], timeout: 60)
        attempt.cancel()
        do {
            _ = try await host.connect(devServer: "not a url at all ?token=secret")
            XCTFail("took a text that is no URL")
        } catch {
            XCTAssertTrue(
                "\(error)".contains("give the URL moonflow serve printed (http://HOST:PORT/?token=…)"), "\(error)")
            XCTAssertFalse("\(error)".contains("secret"), "\(error)")
        }
    }

    func testNoServerListeningIsAnErrorThatSaysHowToStartOneAndNothingIsConnected() throws {
        // A port that was free a moment ago: nothing listens there.
        let port = try freePort()
        let host = try FeatureHost(configuration: .init(searchPaths: []))
        XCTAssertThrowsError(
            try host.connect(devServer: URL(string: "http://127.0.0.1:\(port)/?token=abc")!, timeout: 0.5)
        ) { error in
            let message = "\(error)"
            XCTAssertTrue(message.contains("no dev server at http://127.0.0.1:\(port)/?token=…"), message)
            XCTAssertFalse(message.contains("abc"), "the token stays out of an error's text: \(message)")
            XCTAssertTrue(message.contains("start it with `moonflow serve plugins`"), message)
        }
        XCTAssertThrowsError(try host.load("counter")) { error in
            XCTAssertTrue("\(error)".contains("no plugin named 'counter'"), "\(error)")
        }
    }

    private func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw NSError(domain: "bind", code: Int(errno)) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
