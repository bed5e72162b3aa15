extension LuaValue {
    /// Parses JSON text into a Lua value, keeping integers exact.
    ///
    ///     let v = try LuaValue(json: #"{"id": 9007199254740993, "tags": []}"#)
    ///     v["id"]      // .integer(9007199254740993)
    ///
    /// Numbers without a fraction or exponent become `.integer` when they fit
    /// in `Int64`, other numbers `.number`. Arrays become sequences with
    /// `isJSONArray` set; a `null` element leaves a hole, so later elements
    /// land in the hash part under their integer index. Objects become tables
    /// with string keys; `null` members are absent. Nesting is limited to
    /// `LuaState.maxDepth` (200) levels.
    ///
    /// - Parameter json: the JSON text (one value, optionally surrounded by whitespace).
    /// - Throws: `JSONError` with the line and column of the first problem.
    public init(json: String) throws {
        var text = json
        self = try text.withUTF8 { try JSONReader.parse($0) }
    }

    /// Parses JSON from UTF-8 bytes into a Lua value, keeping integers exact.
    ///
    ///     let v = try LuaValue(jsonBytes: Array(#"[1, 2.5, "x"]"#.utf8))
    ///     v[1]         // .number(2.5)
    ///
    /// Bytes inside strings are copied as they are (Lua strings are bytes), so
    /// invalid UTF-8 there survives; a leading byte-order mark is skipped.
    ///
    /// - Parameter jsonBytes: the JSON text as UTF-8.
    /// - Throws: `JSONError` with the line and column of the first problem.
    package init(jsonBytes: some Collection<UInt8>) throws {
        if let parsed = try jsonBytes.withContiguousStorageIfAvailable({ try JSONReader.parse($0) }) {
            self = parsed
        } else {
            self = try Array(jsonBytes).withUnsafeBufferPointer { try JSONReader.parse($0) }
        }
    }

    /// Encodes the value as compact JSON text.
    ///
    ///     let v: LuaValue = ["items": [1, 2.0], "empty": [], "none": .table(LuaTable())]
    ///     try v.json()   // {"empty":[],"items":[1,2.0],"none":{}}
    ///
    /// A table whose keys are exactly 1...n becomes an array; an empty table
    /// becomes `{}` unless it came from a JSON array; any other table becomes
    /// an object whose integer and float keys are written as strings (`"3"`).
    /// Floats always show they are floats (`2.0`, `1e+300`); invalid UTF-8 in
    /// strings becomes U+FFFD.
    ///
    /// - Parameters:
    ///   - sortedKeys: sort object keys (numbers numerically, then strings
    ///     byte-wise) for stable output; otherwise the order is unspecified.
    ///   - root: how to name this value in error paths (`state` gives `state.items[3].x`).
    /// - Returns: the JSON text.
    /// - Throws: `LuaError.conversion` naming the path of a NaN or infinite
    ///   number, a boolean key, or nesting deeper than `LuaState.maxDepth`.
    public func json(sortedKeys: Bool = true, root: String = "value") throws -> String {
        String(decoding: try jsonBytes(sortedKeys: sortedKeys, root: root), as: UTF8.self)
    }

    /// Encodes the value as compact JSON in UTF-8 bytes, ready to write out.
    ///
    ///     FileHandle.standardOutput.write(Data(try event.jsonBytes() + [0x0A]))
    ///
    /// - Parameters:
    ///   - sortedKeys: sort object keys for stable output (see `json(sortedKeys:root:)`).
    ///   - root: how to name this value in error paths.
    /// - Returns: the JSON text as UTF-8.
    /// - Throws: `LuaError.conversion` as `json(sortedKeys:root:)` does.
    package func jsonBytes(sortedKeys: Bool = true, root: String = "value") throws -> [UInt8] {
        var writer = JSONWriter(sortedKeys: sortedKeys, root: root)
        try writer.write(self, depth: 0)
        return writer.out
    }
}
