import Foundation
import XCTest

/// `moonflow run --state patch` never lies: for random reducer programs, the
/// patches applied in order give every whole state `--state full` prints,
/// compared as JSON (so `null` for an absent key, or `{}` for `[]`, is a
/// difference). The inspector's frames: `StatePatchFramesTests`.
final class StatePatchPropertyTests: ScratchTestCase {
    /// Copies the fixture plugin `Tests/Fixtures/plugins/writes`: each `step` runs a random program of writes.
    private func writePlugin() throws {
        let fixture = Moonflow.root.appendingPathComponent("Tests/Fixtures/plugins/writes/init.lua")
        try write("plugins/writes/init.lua", try String(contentsOf: fixture, encoding: .utf8))
    }

    /// The jsonl lines of `moonflow run` for `seeds`, with `--state MODE`.
    private func run(_ seeds: [Int], state mode: String) throws -> [[String: Any]] {
        let input = seeds.map { "{\"type\":\"step\",\"seed\":\($0)}" }.joined(separator: "\n") + "\n"
        let result = try Moonflow.run(
            ["run", "plugins/writes", "--format", "jsonl", "--state", mode], in: scratch, input: input)
        XCTAssertEqual(result.status, 0, result.stderr)
        return try result.stdout.split(separator: "\n").compactMap { line in
            let object =
                try JSONSerialization.jsonObject(with: Data(line.utf8), options: [.fragmentsAllowed]) as? [String: Any]
            return object?["event"] as? String == "state" ? object : nil
        }
    }

    func testPatchesAppliedInOrderGiveEveryWholeState() throws {
        try writePlugin()
        var generator = SplitMix(seed: 20261124)
        for round in 0..<6 {
            let seeds = (0..<60).map { _ in Int(generator.next() % 1_000_000) }
            let full = try run(seeds, state: "full").map { $0["state"] as Any }
            let patched = try run(seeds, state: "patch")
            XCTAssertEqual(full.count, patched.count, "round \(round)")
            guard var state = patched.first?["state"] else { return XCTFail("round \(round): no first state") }
            XCTAssertTrue(same(state, full[0]))
            for (i, line) in patched.enumerated().dropFirst() {
                if let whole = line["state"] { state = whole; continue }
                let ops = try XCTUnwrap(line["patch"] as? [[String: Any]], "round \(round) state \(i)")
                state = try JSONPatchApplier.apply(ops, to: state)
                XCTAssertTrue(
                    same(state, full[i]),
                    "round \(round) state \(i): patched \(describe(state)) but the state is \(describe(full[i])) after \(ops) (step seed \(seeds[i - 1]))"
                )
                if !same(state, full[i]) { return }
            }
        }
    }

    /// Equal as JSON (written with sorted keys): an array is never equal to an
    /// object, an absent key never to `null`.
    private func same(_ a: Any, _ b: Any) -> Bool { describe(a) == describe(b) }

    private func describe(_ v: Any) -> String {
        (try? String(
            decoding: JSONSerialization.data(withJSONObject: v, options: [.sortedKeys, .fragmentsAllowed]),
            as: UTF8.self)) ?? "\(v)"
    }
}

/// RFC 6902's add, remove and replace on JSONSerialization's values, as a client would apply them.
enum JSONPatchApplier {
    struct Failure: Error, CustomStringConvertible { let description: String }

    static func apply(_ ops: [[String: Any]], to document: Any) throws -> Any {
        var document = document
        for op in ops {
            guard let kind = op["op"] as? String, let path = op["path"] as? String else {
                throw Failure(description: "bad operation \(op)")
            }
            let tokens = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
                .map { $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~") }
            document = try apply(kind, op["value"], tokens[...], to: document)
        }
        return document
    }

    private static func apply(_ kind: String, _ value: Any?, _ tokens: ArraySlice<String>, to node: Any) throws -> Any {
        guard let token = tokens.first else {
            guard kind != "remove", let value else { throw Failure(description: "\(kind) of the whole document") }
            return value
        }
        let rest = tokens.dropFirst()
        if var array = node as? [Any] {
            guard let i = Int(token), i >= 0 else { throw Failure(description: "array index \(token)") }
            if rest.isEmpty {
                switch kind {
                case "add":
                    guard i <= array.count, let value else {
                        throw Failure(description: "add at \(i) of \(array.count)")
                    }; array.insert(value, at: i)
                case "remove":
                    guard i < array.count else { throw Failure(description: "remove \(i) of \(array.count)") };
                    array.remove(at: i)
                default:
                    guard i < array.count, let value else {
                        throw Failure(description: "replace \(i) of \(array.count)")
                    }; array[i] = value
                }
                return array
            }
            guard i < array.count else { throw Failure(description: "path through \(i) of \(array.count)") }
            array[i] = try apply(kind, value, rest, to: array[i])
            return array
        }
        guard var object = node as? [String: Any] else {
            throw Failure(description: "path through a scalar at \(token)")
        }
        if rest.isEmpty {
            switch kind {
            case "add": object[token] = value
            case "remove":
                guard object[token] != nil else { throw Failure(description: "remove of absent \(token)") };
                object[token] = nil
            default:
                guard object[token] != nil else { throw Failure(description: "replace of absent \(token)") };
                object[token] = value
            }
            return object
        }
        guard let child = object[token] else { throw Failure(description: "path through absent \(token)") }
        object[token] = try apply(kind, value, rest, to: child)
        return object
    }
}

/// A small seeded generator: the same programs on every run.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e3779b97f4a7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58476d1ce4e5b9
        z = (z ^ (z >> 27)) &* 0x94d049bb133111eb
        return z ^ (z >> 31)
    }
}
