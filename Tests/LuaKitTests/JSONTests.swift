import LuaKit
import XCTest

final class JSONTests: XCTestCase {
    // MARK: Numbers

    func testIntegersAndFloatsStayDistinct() throws {
        XCTAssertEqual(try LuaValue(json: "1"), .integer(1))
        XCTAssertEqual(try LuaValue(json: "1.0"), .number(1.0))
        XCTAssertEqual(try LuaValue(json: "1e2"), .number(100))
        XCTAssertEqual(try LuaValue(json: "-12"), .integer(-12))
        XCTAssertEqual(try LuaValue.integer(1).json(), "1")
        XCTAssertEqual(try LuaValue.number(1).json(), "1.0")
        XCTAssertEqual(try LuaValue.number(2.0).json(), "2.0")
        XCTAssertEqual(try LuaValue.number(1e300).json(), "1e+300")
        XCTAssertEqual(try LuaValue.number(1e-7).json(), "1e-7")
        XCTAssertEqual(try LuaValue.number(0.1).json(), "0.1")
        XCTAssertEqual(try LuaValue.number(-2.5).json(), "-2.5")
        XCTAssertEqual(try LuaValue(json: "[1, 1.0]").json(), "[1,1.0]")
    }

    func testExtremeIntegersSurviveExactly() throws {
        let cases: [Int64] = [.max, .min, 9_007_199_254_740_993, -9_007_199_254_740_993, 0]
        for n in cases {
            XCTAssertEqual(try LuaValue(json: String(n)), .integer(n))
            XCTAssertEqual(try LuaValue.integer(n).json(), String(n))
        }
        // One past Int64's range is still a number, as a float.
        XCTAssertEqual(try LuaValue(json: "9223372036854775808"), .number(9_223_372_036_854_775_808.0))
        XCTAssertEqual(try LuaValue(json: "-9223372036854775809"), .number(-9_223_372_036_854_775_809.0))
    }

    func testNegativeZero() throws {
        XCTAssertEqual(try LuaValue.number(-0.0).json(), "-0.0")
        guard case .number(let d) = try LuaValue(json: "-0.0") else { return XCTFail("expected a float") }
        XCTAssertEqual(d.sign, .minus)
        XCTAssertEqual(try LuaValue(json: "-0"), .integer(0))
    }

    func testFloatsRoundTripBitForBit() throws {
        var samples: [Double] = [
            .pi, .ulpOfOne, .leastNonzeroMagnitude, .leastNormalMagnitude, .greatestFiniteMagnitude,
            -.greatestFiniteMagnitude, 1e16, 1e15, 123_456_789.125, 0.3, 2.0 / 3.0,
        ]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        while samples.count < 2_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let d = Double(bitPattern: state)
            if d.isFinite { samples.append(d) }
        }
        for d in samples {
            let text = try LuaValue.number(d).json()
            XCTAssertTrue(text.contains(".") || text.contains("e"), "\(text) would read back as an integer")
            guard case .number(let back) = try LuaValue(json: text) else {
                return XCTFail("\(text) did not parse as a float")
            }
            XCTAssertEqual(back.bitPattern, d.bitPattern, text)
        }
    }

    func testNonFiniteNumbersAreRefusedWithTheirPath() throws {
        let state: LuaValue = ["items": [1, 2, ["x": .number(.nan)]]]
        XCTAssertThrowsError(try state.json(root: "state")) { error in
            guard case LuaError.conversion(let path, let reason) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(path, "state.items[3].x")
            XCTAssertTrue(reason.contains("nan"), reason)
        }
        XCTAssertThrowsError(try LuaValue.table(LuaTable(hash: ["a b": .number(-.infinity)])).json()) { error in
            XCTAssertEqual(
                error as? LuaError,
                .conversion(path: #"value["a b"]"#, reason: "-inf cannot be written as JSON (only finite numbers can)"))
        }
        XCTAssertThrowsError(try LuaValue.table(LuaTable(hash: [.boolean(true): 1])).json()) { error in
            guard case LuaError.conversion(let path, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(path, "value[true]")
        }
    }

    func testNumbersOutsideDoubleRangeAreRefused() {
        XCTAssertThrowsError(try LuaValue(json: "[1e400]")) { error in
            XCTAssertEqual((error as? JSONError)?.column, 2)
        }
    }

    // MARK: Strings

    func testEscapesRoundTrip() throws {
        let text = "quote \" backslash \\ slash / tab \t newline \n cr \r bell \u{07} nul \u{0} del \u{7F} é 😀"
        let json = try LuaValue.string(LuaString(text)).json()
        XCTAssertEqual(
            json,
            #""quote \" backslash \\ slash / tab \t newline \n cr \r bell \u0007 nul \u0000 del "# + "\u{7F} é 😀\"")
        XCTAssertEqual(try LuaValue(json: json), .string(LuaString(text)))
    }

    func testEmbeddedZeroBytesSurvive() throws {
        let bytes: [UInt8] = [0x61, 0x00, 0x62, 0x00]
        let json = try LuaValue.string(LuaString(bytes: bytes)).json()
        XCTAssertEqual(json, #""a\u0000b\u0000""#)
        XCTAssertEqual(try LuaValue(json: json), .string(LuaString(bytes: bytes)))
    }

    func testUnicodeEscapesIncludingSurrogatePairs() throws {
        XCTAssertEqual(try LuaValue(json: #""\u00e9\uD83D\uDE00\u0041""#), .string("é😀A"))
        XCTAssertThrowsError(try LuaValue(json: #""\uD83D x""#)) { error in
            XCTAssertTrue("\(error)".contains("expected a low surrogate"), "\(error)")
        }
        XCTAssertThrowsError(try LuaValue(json: #""ab\uDE00""#)) { error in
            XCTAssertEqual((error as? JSONError)?.column, 4)
        }
    }

    func testInvalidUTF8IsWrittenAsReplacementCharacter() throws {
        let value = LuaValue.string(LuaString(bytes: [0x61, 0xFF, 0x62, 0xE2, 0x82]))
        XCTAssertEqual(try value.json(), "\"a\u{FFFD}b\u{FFFD}\"")
        // Keys are repaired the same way.
        let table = LuaValue.table(LuaTable(hash: [.string(LuaString(bytes: [0xC0])): 1]))
        XCTAssertEqual(try table.json(), "{\"\u{FFFD}\":1}")
    }

    func testRawBytesInsideStringsAreKept() throws {
        let input: [UInt8] = [0x22, 0x61, 0xFF, 0x22]
        XCTAssertEqual(try LuaValue(jsonBytes: input), .string(LuaString(bytes: [0x61, 0xFF])))
    }

    // MARK: Tables

    func testEmptyArrayAndEmptyObjectStayApart() throws {
        let array = try LuaValue(json: "[]")
        let object = try LuaValue(json: "{}")
        XCTAssertEqual(array.tableValue?.isJSONArray, true)
        XCTAssertEqual(object.tableValue?.isJSONArray, false)
        XCTAssertEqual(try array.json(), "[]")
        XCTAssertEqual(try object.json(), "{}")
        XCTAssertEqual(try LuaValue.table(LuaTable()).json(), "{}")
        XCTAssertEqual(try LuaValue(json: #"{"a":[],"b":{}}"#).json(), #"{"a":[],"b":{}}"#)
    }

    func testNullLeavesHolesAndAbsentMembers() throws {
        let holes = try XCTUnwrap(LuaValue(json: "[1, null, 3, 4]").tableValue)
        XCTAssertEqual(holes.array, [1])
        XCTAssertEqual(holes.hash, [.integer(3): 3, .integer(4): 4])
        XCTAssertTrue(holes.isJSONArray)
        XCTAssertEqual(
            try LuaValue.table(holes).json(), "[1,null,3,4]", "a JSON array with a null is written as one again")
        // And it reads back as it was (the fuzz target jsonl found `[[null,[]],[]]` written as an object).
        for text in ["[[null,[]],[]]", "[null,1]", "[1,null,null,{\"a\":[null,2]}]"] {
            let value = try LuaValue(json: text)
            XCTAssertEqual(try LuaValue(json: try value.json()), value, text)
        }
        // A table that is no JSON array's keeps the object form.
        XCTAssertEqual(try LuaValue.table(LuaTable(array: [1], hash: [.integer(3): 3])).json(), #"{"1":1,"3":3}"#)

        XCTAssertEqual(try LuaValue(json: "[null, null]").tableValue?.isEmpty, true)
        XCTAssertEqual(try LuaValue(json: #"{"a": null, "b": 1}"#), ["b": 1])
        XCTAssertEqual(try LuaValue(json: "null"), .nil)
        XCTAssertEqual(try LuaValue.nil.json(), "null")
    }

    func testTablesWithOtherKeysBecomeSortedObjects() throws {
        var t = LuaTable(array: ["one", "two"])
        t[.integer(10)] = "ten"
        t[.integer(0)] = "zero"
        t[.integer(-1)] = "minus"
        t[.number(2.5)] = "half"
        t["b"] = 1
        t["B"] = 2
        t["a"] = 3
        XCTAssertEqual(
            try LuaValue.table(t).json(),
            #"{"-1":"minus","0":"zero","1":"one","2":"two","2.5":"half","10":"ten","B":2,"a":3,"b":1}"#)
        // Unsorted output holds the same members.
        XCTAssertEqual(
            try LuaValue(json: LuaValue.table(t).json(sortedKeys: false)), try LuaValue(json: LuaValue.table(t).json()))
    }

    func testDocumentRoundTrip() throws {
        let text =
            #"{"event":"state","seq":3,"state":{"items":[{"id":1,"score":0.5,"tags":["a","b"]},{"id":2,"score":-1.25e-10,"tags":[]}],"loading":false,"meta":{},"query":"caf\u00e9"},"t":250}"#
        let value = try LuaValue(json: text)
        XCTAssertEqual(value["state"]?["items"]?[1]?["score"], .number(-1.25e-10))
        XCTAssertEqual(try value.json(), text.replacingOccurrences(of: #"\u00e9"#, with: "é"))
        XCTAssertEqual(try LuaValue(jsonBytes: value.jsonBytes()), value)
    }

    func testWhitespaceByteOrderMarkAndNonContiguousInput() throws {
        XCTAssertEqual(try LuaValue(json: " \t\r\n[ 1 , { \"a\" : true } ]\n"), [1, ["a": true]])
        XCTAssertEqual(try LuaValue(jsonBytes: [0xEF, 0xBB, 0xBF] + Array("[false]".utf8)), [false])
        XCTAssertEqual(try LuaValue(jsonBytes: Array("[1,2]".utf8).lazy.map { $0 }), [1, 2])
    }

    // MARK: Errors

    func testMalformedInputReportsLineAndColumn() {
        let cases: [(String, Int, Int, String)] = [
            (#"{"a": 1 "b": 2}"#, 1, 9, #"line 1, column 9: expected ',' or '}' after an object member, found '"'"#),
            (
                "{\n  \"a\": [1,\n    2,,\n]}", 3, 7,
                "line 3, column 7: expected a JSON value (object, array, string, number, true, false or null), found ','"
            ),
            ("[\"é\", x]", 1, 7, "found 'x'"),
            ("", 1, 1, "expected a JSON value, found end of input"),
            ("1 2", 1, 3, "expected end of input after the JSON value, found '2'"),
            ("[1,]", 1, 4, "found ']'"),
            (#"{"a":1,}"#, 1, 8, "expected a string key after ',' in an object, found '}'"),
            ("{1:2}", 1, 2, "expected a string key or '}', found '1'"),
            (#"{"a" 1}"#, 1, 6, "expected ':' after an object key, found '1'"),
            ("[1 2]", 1, 4, "expected ',' or ']' after an array element, found '2'"),
            ("01", 1, 2, "leading zeros are not allowed"),
            ("1.", 1, 3, "expected a digit after '.', found end of input"),
            ("1e+", 1, 4, "expected a digit in the exponent"),
            ("-x", 1, 2, "expected a digit after '-', found 'x'"),
            ("tru", 1, 4, "expected 'true', found end of input"),
            ("[nul]", 1, 5, "expected 'null', found ']'"),
            (#""abc"#, 1, 5, "expected '\"' to close the string, found end of input"),
            ("\"a\nb\"", 1, 3, "found a control character (0x0A)"),
            (#""\x""#, 1, 3, "expected an escape sequence"),
            (#""\u12G4""#, 1, 6, "expected 4 hex digits after \\u, found 'G'"),
            ("[\u{1F600}]", 1, 2, "found '😀'"),
        ]
        for (input, line, column, message) in cases {
            XCTAssertThrowsError(try LuaValue(json: input), input) { error in
                guard let error = error as? JSONError else { return XCTFail("\(input): \(error)") }
                XCTAssertEqual(error.line, line, input)
                XCTAssertEqual(error.column, column, input)
                XCTAssertTrue(error.description.contains(message), "\(input): \(error)")
                XCTAssertTrue(error.description.hasPrefix("line \(line), column \(column): "), "\(input): \(error)")
            }
        }
    }

    func testNestingIsLimited() throws {
        let ok = String(repeating: "[", count: LuaState.maxDepth) + String(repeating: "]", count: LuaState.maxDepth)
        XCTAssertEqual(try LuaValue(json: ok).json(), ok)

        let tooDeep =
            String(repeating: "[", count: LuaState.maxDepth + 1) + String(repeating: "]", count: LuaState.maxDepth + 1)
        XCTAssertThrowsError(try LuaValue(json: tooDeep)) { error in
            XCTAssertEqual((error as? JSONError)?.column, LuaState.maxDepth + 1)
        }
        for opener in ["[", #"{"a":"#] {
            let hostile = String(repeating: opener, count: 10_000)
            XCTAssertThrowsError(try LuaValue(json: hostile)) { error in
                XCTAssertTrue("\(error)".contains("at most 200 levels"), "\(error)")
            }
        }

        var deep = LuaValue.integer(1)
        for _ in 0...LuaState.maxDepth { deep = [deep] }
        XCTAssertThrowsError(try deep.json()) { error in
            guard case LuaError.conversion(_, let reason) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("nested deeper than 200"), reason)
        }
    }
}
