import XCTest
@testable import LuaKit

/// Tables keyed by strings: short strings hash by their words and length
/// (StringHashing.swift), and a small table is read by name without hashing
/// (`LuaTable[String]`); both must still tell every key apart and find each one.
final class StringKeyTests: XCTestCase {
    func testKeysThatLoadTheSameWordsStayApart() {
        // Zero bytes pad a short string's word: "a" and "a\0" load the same bits.
        let keys: [LuaString] = [
            LuaString(bytes: []), LuaString(bytes: [0]), LuaString(bytes: [0, 0]),
            LuaString(bytes: [97]), LuaString(bytes: [97, 0]), LuaString(bytes: [97, 0, 0, 0, 0, 0, 0, 0]),
            LuaString(bytes: Array(repeating: 7, count: 8)), LuaString(bytes: Array(repeating: 7, count: 9)),
            LuaString(bytes: Array(repeating: 7, count: 16)), LuaString(bytes: Array(repeating: 7, count: 17)),
            LuaString(bytes: [0xFF, 0xFE, 0x80]),  // not UTF-8
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

    func testFieldsReadByNameInSmallAndLargeTables() {
        // Both sides of the size where reading by name stops comparing bytes and hashes.
        for size in [0, 1, 7, LuaTable.scannedFieldCount, LuaTable.scannedFieldCount + 1, 40] {
            var state: LuaValue = .table(LuaTable())
            for i in 0..<size { state["f\(i)"] = .integer(Int64(i)) }
            for i in 0..<size { XCTAssertEqual(state["f\(i)"], .integer(Int64(i)), "size \(size)") }
            XCTAssertNil(state["f\(size)"], "size \(size)")
            XCTAssertNil(state["f"], "size \(size)")  // a prefix of every key
            XCTAssertNil(state["f00"], "size \(size)")  // same length as f10...f39
        }
        var named: LuaValue = ["café": 1, "cafe": 2, "1": "one"]
        named["ünïcödé"] = true
        XCTAssertEqual(named["café"], 1)
        XCTAssertEqual(named["cafe"], 2)
        XCTAssertEqual(named["ünïcödé"], true)
        XCTAssertEqual(named["1"], "one")
        // A list's items are not fields: "1" names no item.
        let list: LuaValue = ["a", "b"]
        XCTAssertNil(list["1"])
        XCTAssertEqual(list.tableValue?["1"], .nil)
    }
}
