/// A JSON object written one member at a time, in the order the members are added: how
/// Moonflow's wire formats put their lines together (the jsonl events, recordings, the
/// inspector's frames and pipe, the dev server's messages), so that none splices JSON text
/// by hand.
///
///     var line = JSONObjectWriter()
///     line.add("event", "state")
///     line.add("t", 5)
///     line.add("state", raw: #"{"count":1}"#)
///     line.text   // {"event":"state","t":5,"state":{"count":1}}
///
/// Keys and string values are quoted as `LuaValue.json` quotes a string (`"`, `\` and
/// control characters escaped, `\n` or `\u001b`); a `LuaValue` member is written as
/// `json(sortedKeys: true, root:)` writes it, into the same buffer; a `raw` member is JSON
/// written already (a state encoded straight from the Lua table, a patch) and goes in as
/// it is, unchecked. Keys are not checked for repeats: each format adds each key once.
package struct JSONObjectWriter: Sendable {
    private var writer = JSONWriter(sortedKeys: true, root: "value")
    private var members = 0

    package init() {
        writer.out.append(UInt8(ascii: "{"))
    }

    /// Whether no member has been added.
    package var isEmpty: Bool { members == 0 }

    /// The object's text, closed.
    package var text: String {
        let out = writer.out
        return String(unsafeUninitializedCapacity: out.count + 1) { buffer in
            _ = buffer.initialize(fromContentsOf: out)
            buffer[out.count] = UInt8(ascii: "}")
            return out.count + 1
        }
    }

    /// The object's text as UTF-8, closed.
    package var bytes: [UInt8] { writer.out + [UInt8(ascii: "}")] }

    private mutating func key(_ key: String) {
        if members > 0 { writer.out.append(UInt8(ascii: ",")) }
        members += 1
        writer.appendString(key)
        writer.out.append(UInt8(ascii: ":"))
    }

    package mutating func add(_ key: String, _ value: String) {
        self.key(key)
        writer.appendString(value)
    }

    package mutating func add(_ key: String, _ value: Int) {
        self.key(key)
        writer.appendInteger(Int64(value))
    }

    package mutating func add(_ key: String, _ value: Int64) {
        self.key(key)
        writer.appendInteger(value)
    }

    package mutating func add(_ key: String, _ value: Bool) {
        self.key(key)
        writer.append(value ? "true" : "false")
    }

    /// A list of strings.
    package mutating func add(_ key: String, _ values: [String]) {
        list(key, values) { $0.appendString($1) }
    }

    /// A list of integers.
    package mutating func add(_ key: String, _ values: [Int]) {
        list(key, values) { $0.appendInteger(Int64($1)) }
    }

    /// An object written by another writer.
    package mutating func add(_ key: String, _ object: JSONObjectWriter) {
        self.key(key)
        writer.out.append(contentsOf: object.writer.out)
        writer.out.append(UInt8(ascii: "}"))
    }

    /// A list of objects.
    package mutating func add(_ key: String, _ objects: [JSONObjectWriter]) {
        list(key, objects) { writer, object in
            writer.out.append(contentsOf: object.writer.out)
            writer.out.append(UInt8(ascii: "}"))
        }
    }

    /// `key` and a list of `values`, each written by `element`.
    private mutating func list<Element>(
        _ key: String, _ values: [Element], _ element: (inout JSONWriter, Element) -> Void
    ) {
        self.key(key)
        writer.out.append(UInt8(ascii: "["))
        for (n, value) in values.enumerated() {
            if n > 0 { writer.out.append(UInt8(ascii: ",")) }
            element(&writer, value)
        }
        writer.out.append(UInt8(ascii: "]"))
    }

    /// A Lua value, keys sorted; `root` names it in the error.
    /// - Throws: `LuaError.conversion` as `LuaValue.json(sortedKeys:root:)` does; the object
    ///   is then as it was before the call.
    package mutating func add(_ key: String, _ value: LuaValue, root: String) throws(LuaError) {
        let (length, count) = (writer.out.count, members)
        self.key(key)
        writer.root = root
        do {
            try writer.write(value, depth: 0)
        } catch {
            writer.out.removeSubrange(length...)
            writer.keys.removeAll()
            members = count
            throw error
        }
    }

    /// A Lua value, keys sorted, or `fallback` (JSON text) when it cannot be written as JSON.
    package mutating func add(_ key: String, _ value: LuaValue, root: String, otherwise fallback: String) {
        do { try add(key, value, root: root) } catch { add(key, raw: fallback) }
    }

    /// JSON text written already, inserted verbatim.
    package mutating func add(_ key: String, raw json: String) {
        self.key(key)
        writer.out.append(contentsOf: json.utf8)
    }

    /// JSON text written already as UTF-8, inserted verbatim.
    package mutating func add(_ key: String, raw json: [UInt8]) {
        self.key(key)
        writer.out.append(contentsOf: json)
    }
}
