import LuaKit
import XCTest

private struct Numbers: Codable, Equatable {
    var int: Int
    var int8: Int8
    var uint64: UInt64
    var min: Int64
    var max: Int64
    var beyondDouble: Int64
    var double: Double
    var wholeDouble: Double
    var negativeZero: Double
    var float: Float
}

private enum Shape: Codable, Equatable {
    case circle(radius: Double)
    case rect(width: Int, height: Int)
    case labeled(String, Int)
    case empty
}

private enum Mode: String, Codable { case fast, careful }

private struct Item: Codable, Equatable {
    var id: Int
    var title: String
    var note: String?
    var tags: [String]
    var shape: Shape
}

private struct Inventory: Codable, Equatable {
    var name: String
    var items: [Item]
    var counts: [String: Int]
    var byID: [Int: String]
    var grid: [[Int]]
    var maybe: [Int?]
    var mode: Mode
    var owner: Item?
    var flags: Set<String>
}

/// Stores its parent's fields under "super", as class hierarchies do.
private struct WithSuper: Codable, Equatable {
    var base: Int
    var extra: String

    enum CodingKeys: String, CodingKey { case extra }

    init(base: Int, extra: String) {
        self.base = base
        self.extra = extra
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        extra = try c.decode(String.self, forKey: .extra)
        base = try Int(from: c.superDecoder())
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(extra, forKey: .extra)
        try base.encode(to: c.superEncoder())
    }
}

final class CodableTests: XCTestCase {
    private let encoder = LuaValueEncoder()
    private let decoder = LuaValueDecoder()

    private var inventory: Inventory {
        Inventory(
            name: "shop\u{0}front",
            items: [
                Item(id: 1, title: "ball", note: nil, tags: [], shape: .circle(radius: 1.5)),
                Item(id: 2, title: "box", note: "heavy", tags: ["a", "b"], shape: .rect(width: 2, height: 3)),
                Item(id: 3, title: "sign", note: nil, tags: ["x"], shape: .labeled("stop", 8)),
                Item(id: 4, title: "void", note: nil, tags: [], shape: .empty),
            ],
            counts: ["ball": 3, "box": 0],
            byID: [1: "ball", 20: "box"],
            grid: [[1, 2], [], [3]],
            maybe: [1, nil, 3],
            mode: .careful,
            owner: nil,
            flags: ["new"])
    }

    /// The dotted path of a decoding error, with indices in brackets.
    private func path(of error: any Error) -> String {
        let context: DecodingError.Context? =
            switch error as? DecodingError {
            case .typeMismatch(_, let c), .valueNotFound(_, let c), .keyNotFound(_, let c), .dataCorrupted(let c): c
            default: nil
            }
        guard let context else { return "not a DecodingError: \(error)" }
        var keys = context.codingPath
        if case .keyNotFound(let key, _) = error as? DecodingError { keys.append(key) }
        return keys.map { key in key.intValue.map { "[\($0)]" } ?? "." + key.stringValue }.joined()
    }

    private func message(of error: any Error) -> String {
        switch error as? DecodingError {
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .keyNotFound(_, let c), .dataCorrupted(let c):
            c.debugDescription
        default: "not a DecodingError: \(error)"
        }
    }

    // MARK: Round trips

    /// A `LuaValue` is `Codable`: `LuaValueDecoder` and `LuaValueEncoder` hand it over as it
    /// is (integer and boolean keys kept), and JSON's coders see JSON's values.
    func testALuaValueDecodesAndEncodesAsItself() throws {
        struct View: Codable, Equatable { let title: String; let extra: LuaValue }
        let state: LuaValue = [
            "title": "cart",
            "extra": .table(LuaTable(array: [1, "two"], hash: [.integer(10): true, .boolean(true): "yes"])),
        ]
        let view = try LuaValueDecoder().decode(View.self, from: state)
        XCTAssertEqual(view.extra, state["extra"], "the field is the value itself, every key kept")
        XCTAssertEqual(try LuaValueDecoder().decode(LuaValue.self, from: state), state)
        XCTAssertEqual(try LuaValueEncoder().encode(view), state)

        let json = Data(#"{"items":[1,2.5,"x",true,null],"empty":[],"n":{"a":1}}"#.utf8)
        let decoded = try JSONDecoder().decode(LuaValue.self, from: json)
        XCTAssertEqual(decoded["items"]?[0], .integer(1))
        XCTAssertEqual(decoded["items"]?[1], .number(2.5))
        XCTAssertEqual(decoded["items"]?[2], "x")
        XCTAssertEqual(decoded["items"]?[3], .boolean(true))
        XCTAssertEqual(decoded["items"]?[4], nil, "null is a hole")
        XCTAssertEqual(decoded["n"]?["a"], .integer(1))
        let encoded = try JSONEncoder().encode(decoded["n"]!)
        XCTAssertEqual(
            try JSONDecoder().decode(LuaValue.self, from: encoded), decoded["n"], "a round trip through JSON")
        XCTAssertEqual(
            String(decoding: try JSONEncoder().encode(LuaValue.table(LuaTable(isJSONArray: true))), as: UTF8.self), "[]"
        )
        XCTAssertThrowsError(try JSONEncoder().encode(LuaValue.table(LuaTable(hash: [.boolean(true): 1])))) { error in
            XCTAssertTrue("\(error)".contains("a table key of type boolean"), "\(error)")
        }
    }

    func testNestedValuesRoundTrip() throws {
        let value = try encoder.encode(inventory)
        XCTAssertEqual(try decoder.decode(Inventory.self, from: value), inventory)
    }

    func testNestedValuesRoundTripThroughJSON() throws {
        var sample = inventory
        // An array with a nil in it is written as a JSON array with null there, and read back as it was.
        XCTAssertTrue(try encoder.encode(sample).json().contains(#""maybe":[1,null,3]"#))
        XCTAssertEqual(
            try decoder.decode(Inventory.self, from: LuaValue(json: try encoder.encode(sample).json())), sample)
        sample.maybe = [1, 2]
        let json = try encoder.encode(sample).json()
        XCTAssertEqual(try decoder.decode(Inventory.self, from: LuaValue(json: json)), sample)
    }

    func testNumbersKeepTheirKindAndExactValue() throws {
        let numbers = Numbers(
            int: -7, int8: -128, uint64: 42, min: .min, max: .max, beyondDouble: 9_007_199_254_740_993,
            double: 0.1, wholeDouble: 1, negativeZero: -0.0, float: 1.5)
        let value = try encoder.encode(numbers)
        XCTAssertEqual(value["int"], .integer(-7))
        XCTAssertEqual(value["min"], .integer(.min))
        XCTAssertEqual(value["max"], .integer(.max))
        XCTAssertEqual(value["beyondDouble"], .integer(9_007_199_254_740_993))
        XCTAssertEqual(value["wholeDouble"], .number(1))
        XCTAssertEqual(value["float"], .number(1.5))

        let back = try decoder.decode(Numbers.self, from: LuaValue(json: value.json()))
        XCTAssertEqual(back, numbers)
        XCTAssertEqual(back.negativeZero.sign, .minus)
        XCTAssertTrue(try value.json().contains(#""negativeZero":-0.0"#))
        XCTAssertTrue(try value.json().contains(#""wholeDouble":1.0"#))
    }

    func testShapeOfEncodedValue() throws {
        let item = Item(id: 2, title: "box", note: nil, tags: [], shape: .rect(width: 2, height: 3))
        let expected: LuaValue = ["id": 2, "title": "box", "tags": [], "shape": ["rect": ["width": 2, "height": 3]]]
        let value = try encoder.encode(item)
        XCTAssertEqual(value, expected)
        XCTAssertNil(value.tableValue?.hash["note"], "nil must leave the key absent")
        XCTAssertEqual(value["tags"]?.tableValue?.isJSONArray, true)
        XCTAssertEqual(try value.json(), #"{"id":2,"shape":{"rect":{"height":3,"width":2}},"tags":[],"title":"box"}"#)
        XCTAssertEqual(try encoder.encode(Shape.labeled("a", 1)), ["labeled": ["_0": "a", "_1": 1]])
        XCTAssertEqual(try encoder.encode(Mode.fast), "fast")
    }

    func testNilElementsLeaveHoles() throws {
        let value = try encoder.encode([1, nil, 3] as [Int?])
        let table = try XCTUnwrap(value.tableValue)
        XCTAssertEqual(table.array, [1])
        XCTAssertEqual(table.hash, [.integer(3): 3])
        XCTAssertEqual(try decoder.decode([Int?].self, from: value), [1, nil, 3])
        XCTAssertEqual(try decoder.decode([Int?].self, from: LuaValue(json: "[null, 2, null, 4]")), [nil, 2, nil, 4])
    }

    func testStringsWithZeroBytesAndInvalidUTF8() throws {
        XCTAssertEqual(try encoder.encode("a\u{0}b"), .string(LuaString(bytes: [0x61, 0, 0x62])))
        XCTAssertEqual(try decoder.decode(String.self, from: .string(LuaString(bytes: [0x61, 0xFF]))), "a\u{FFFD}")
    }

    func testSuperEncoderAndDecoder() throws {
        let value = try encoder.encode(WithSuper(base: 5, extra: "x"))
        XCTAssertEqual(value, ["extra": "x", "super": 5])
        XCTAssertEqual(try decoder.decode(WithSuper.self, from: value), WithSuper(base: 5, extra: "x"))
    }

    // MARK: Lenient numbers

    func testNumbersConvertWhenExact() throws {
        XCTAssertEqual(try decoder.decode(Double.self, from: .integer(3)), 3.0)
        XCTAssertEqual(try decoder.decode(Int.self, from: .number(3.0)), 3)
        XCTAssertEqual(try decoder.decode(Float.self, from: .integer(2)), 2)
        XCTAssertThrowsError(try decoder.decode(Int.self, from: .number(3.5))) { error in
            XCTAssertEqual(message(of: error), "expected an integer (Int), found a float (3.5)")
        }
        XCTAssertThrowsError(try decoder.decode(Float.self, from: .number(1e300))) { error in
            XCTAssertTrue(message(of: error).contains("Float's range"), message(of: error))
        }
    }

    func testIntegersAreRangeChecked() throws {
        XCTAssertThrowsError(try decoder.decode([UInt8].self, from: [1, 300])) { error in
            XCTAssertEqual(path(of: error), "[1]")
            XCTAssertEqual(message(of: error), "expected an integer (UInt8) within 0...255, found an integer (300)")
        }
        XCTAssertThrowsError(try decoder.decode(UInt64.self, from: .integer(-1)))
        XCTAssertThrowsError(try encoder.encode(["big": UInt64.max])) { error in
            guard case EncodingError.invalidValue(_, let context) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(context.codingPath.map(\.stringValue), ["big"])
        }
    }

    // MARK: Errors

    func testTypeMismatchNamesPathAndLuaTypes() throws {
        var value = try encoder.encode(inventory)
        guard case .table(var root) = value, case .table(var items) = root["items"],
            case .table(var second) = items.array[1]
        else {
            return XCTFail("unexpected shape \(value)")
        }
        second["title"] = 3
        items.array[1] = .table(second)
        root["items"] = .table(items)
        value = .table(root)
        XCTAssertThrowsError(try decoder.decode(Inventory.self, from: value)) { error in
            guard case DecodingError.typeMismatch = error else { return XCTFail("\(error)") }
            XCTAssertEqual(path(of: error), ".items[1].title")
            XCTAssertEqual(message(of: error), "expected a string, found an integer (3)")
        }
    }

    func testMissingKeyNamesPath() throws {
        let value: LuaValue = [
            "name": "n", "items": [["id": 1, "tags": [], "shape": ["empty": [:]]]],
            "counts": [:], "byID": [:], "grid": [], "maybe": [], "mode": "fast", "flags": [],
        ]
        XCTAssertThrowsError(try decoder.decode(Inventory.self, from: value)) { error in
            guard case DecodingError.keyNotFound = error else { return XCTFail("\(error)") }
            XCTAssertEqual(path(of: error), ".items[0].title")
            XCTAssertTrue(message(of: error).contains(#"key "title""#), message(of: error))
        }
    }

    func testWrongContainerKinds() {
        XCTAssertThrowsError(try decoder.decode(Item.self, from: "text")) { error in
            XCTAssertEqual(message(of: error), #"expected a table, found a string ("text")"#)
        }
        XCTAssertThrowsError(try decoder.decode([Int].self, from: ["a": 1])) { error in
            XCTAssertTrue(message(of: error).contains("expected a sequence"), message(of: error))
        }
        XCTAssertThrowsError(try decoder.decode(Bool.self, from: .nil)) { error in
            guard case DecodingError.valueNotFound = error else { return XCTFail("\(error)") }
            XCTAssertEqual(message(of: error), "expected a boolean, found nil")
        }
        XCTAssertThrowsError(try decoder.decode([Int].self, from: [1, true])) { error in
            XCTAssertEqual(path(of: error), "[1]")
            XCTAssertEqual(message(of: error), "expected an integer (Int), found a boolean (true)")
        }
        XCTAssertThrowsError(try decoder.decode(Mode.self, from: "slow")) { error in
            guard case DecodingError.dataCorrupted = error else { return XCTFail("\(error)") }
        }
    }

    func testOptionalsAreAbsentKeys() throws {
        struct Partial: Codable, Equatable { var a: Int?; var b: [String]? }
        XCTAssertEqual(try encoder.encode(Partial(a: nil, b: nil)), .table(LuaTable()))
        XCTAssertEqual(try decoder.decode(Partial.self, from: .table(LuaTable())), Partial(a: nil, b: nil))
        XCTAssertEqual(try decoder.decode(Partial.self, from: ["a": 1, "b": ["x"]]), Partial(a: 1, b: ["x"]))
        XCTAssertEqual(try decoder.decode(Int?.self, from: .nil), nil)
    }
}
