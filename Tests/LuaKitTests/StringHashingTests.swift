import XCTest
@testable import LuaKit

/// Short strings hash by their words and length (StringHashing.swift): tables keyed by
/// them must still tell every key apart and find each one.
final class StringHashingTests: XCTestCase {
    func testKeysThatLoadTheSameWordsStayApart() {
        // Zero bytes pad a short string's word: "a" and "a\0" load the same bits.
        let keys: [LuaString] = [
            LuaString(bytes: []), LuaString(bytes: [0]), LuaString(bytes: [0, 0]),
            LuaString(bytes: [97]), LuaString(bytes: [97, 0]), LuaString(bytes: [97, 0, 0, 0, 0, 0, 0, 0]),
            LuaString(bytes: Array(repeating: 7, count: 8)), LuaString(bytes: Array(repeating: 7, count: 9)),
            LuaString(bytes: Array(repeating: 7, count: 16)), LuaString(bytes: Array(repeating: 7, count: 17)),
            LuaString(bytes: [0xFF, 0xFE, 0x80]),   // not UTF-8
        ]
        var table = LuaTable()
        for (i, k) in keys.enumerated() { table[.string(k)] = .integer(Int64(i)) }
        XCTAssertEqual(table.count, keys.count)
        for (i, k) in keys.enumerated() { XCTAssertEqual(table[.string(k)], .integer(Int64(i)), "key \(k.bytes)") }
        var byString: [LuaString: Int] = [:]
        for (i, k) in keys.enumerated() { byString[k] = i }
        XCTAssertEqual(byString.count, keys.count)
        for (i, k) in keys.enumerated() { XCTAssertEqual(byString[k], i) }
    }

    func testEveryLengthFindsItsKeys() {
        // 2,000 keys of 1...40 bytes (both sides of 8 and 16), with integers among them.
        var table = LuaTable()
        var expected: [(LuaValue, LuaValue)] = []
        for i in 0..<2_000 {
            let length = 1 + i % 40
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: ($0 &* 31) &+ i &* 7) }
            let key = i % 5 == 0 ? LuaValue.integer(Int64(i)) : .string(LuaString(bytes: bytes))
            guard table[key].isNil else { continue }
            expected.append((key, .integer(Int64(i))))
            table[key] = .integer(Int64(i))
        }
        XCTAssertEqual(table.count, expected.count)
        for (k, v) in expected { XCTAssertEqual(table[k], v) }
        // A string key and the integer of the same bits are different keys.
        let word = LuaValue.string(LuaString(bytes: [1, 0, 0, 0, 0, 0, 0, 0]))
        var mixed = LuaTable()
        mixed[word] = "string"
        mixed[.integer(1)] = "integer"
        XCTAssertEqual(mixed[word], "string")
        XCTAssertEqual(mixed[.integer(1)], "integer")
    }
}
