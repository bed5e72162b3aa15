import LuaKit
import MoonflowLua
import MoonflowTool
import XCTest

/// What `moonflow types --swift` and `--luals` make of names and types that Swift or LuaLS
/// cannot take as they are (the example plugins' files are compiled in GeneratedTypesTests).
final class TypesGeneratorTests: XCTestCase {
    private func feature(
        _ state: SchemaType, actions: [String: [String: Schema.Field]] = [:],
        outputs: [String: [String: Schema.Field]]? = nil
    ) -> [FeatureDeclarations] {
        [
            FeatureDeclarations(
                name: "to-do", kind: .feature, state: state, stateIsInferred: false, actions: actions, outputs: outputs)
        ]
    }

    func testLuaNamesBecomeSwiftNamesWithTheLuaKeyKept() {
        let state = SchemaType.record([
            .init(name: "a b", type: .scalar(.string)),
            .init(name: "default", type: .scalar(.integer)),
            .init(name: "is_done", type: .scalar(.boolean)),
            .init(name: "self", type: .optional(.scalar(.number))),
            .init(name: "status", type: .enumeration(["in-progress", "done"])),
        ])
        let swift = SwiftTypesGenerator(features: feature(state), command: "moonflow types --swift x").source()
        XCTAssertTrue(swift.contains("public struct ToDoState: Codable, Equatable, Sendable {"), swift)
        XCTAssertTrue(swift.contains("public var `default`: Int"), swift)
        XCTAssertTrue(swift.contains("public var isDone: Bool"), swift)
        XCTAssertTrue(swift.contains("public var self_: Double?"), swift)
        XCTAssertTrue(swift.contains("case aB = \"a b\""), swift)
        XCTAssertTrue(swift.contains("case isDone = \"is_done\""), swift)
        XCTAssertTrue(swift.contains("case self_ = \"self\""), swift)
        XCTAssertTrue(swift.contains("case inProgress = \"in-progress\""), swift)
    }

    func testActionsEncodeTheirLuaNamesAndFields() {
        let swift = SwiftTypesGenerator(
            features: feature(.record([]), actions: ["open-post": ["post_id": .init(type: .integer, optional: true)]]),
            command: "moonflow types --swift x"
        ).source()
        XCTAssertTrue(swift.contains("case openPost(postId: Int? = nil)"), swift)
        XCTAssertTrue(swift.contains("try container.encode(\"open-post\", forKey: Key(\"type\"))"), swift)
        XCTAssertTrue(swift.contains("try container.encodeIfPresent(v0, forKey: Key(\"post_id\"))"), swift)
        XCTAssertFalse(swift.contains("ToDoEffect"), "no outputs declared, no effect type")
    }

    func testLuaLSTypesForListsMapsEnumsAndOptionals() {
        let state = SchemaType.record([
            .init(name: "items", type: .list(.record([.init(name: "id", type: .scalar(.integer))]))),
            .init(name: "byName", type: .map(.scalar(.number))),
            .init(name: "mode", type: .optional(.enumeration(["idle", "busy"]))),
            .init(name: "tags", type: .list(.enumeration(["a", "b"]))),
        ])
        let luals = LuaLSAnnotations(
            features: feature(state, outputs: ["done": [:]]), command: "moonflow types --luals x"
        ).source()
        XCTAssertTrue(luals.hasPrefix("---@meta\n"), luals)
        XCTAssertTrue(luals.contains("---@field items ToDoState.items.item[]\n"), luals)
        XCTAssertTrue(luals.contains("---@class ToDoState.items.item\n---@field id integer\n"), luals)
        XCTAssertTrue(luals.contains("---@field byName table<string, number>\n"), luals)
        XCTAssertTrue(luals.contains("---@field mode? \"idle\"|\"busy\"\n"), luals)
        XCTAssertTrue(luals.contains("---@field tags (\"a\"|\"b\")[]\n"), luals)
        XCTAssertTrue(
            luals.contains(
                "---@class ToDoEffect.done\n---@field type \"done\"\n---@alias ToDoEffect ToDoEffect.done\n"), luals)
    }

    /// A record of the state is written once, not again after the actions: LuaLS took the
    /// second `---@class` of the same name as a duplicate definition.
    func testLuaLSWritesEachRecordClassOnce() {
        let state = SchemaType.record([
            .init(name: "items", type: .list(.record([.init(name: "id", type: .scalar(.integer))]))),
            .init(name: "owner", type: .record([.init(name: "name", type: .scalar(.string))])),
        ])
        let luals = LuaLSAnnotations(
            features: feature(state, actions: ["add": ["item": .init(type: .integer, optional: false)]]),
            command: "moonflow types --luals x"
        ).source()
        let classes = luals.split(separator: "\n").filter { $0.hasPrefix("---@class ") }
        XCTAssertEqual(
            classes,
            [
                "---@class ToDoState", "---@class ToDoState.items.item", "---@class ToDoState.owner",
                "---@class ToDoAction.add",
            ],
            luals)
    }

    /// Names from outside reach generated Swift escaped or mapped to a valid, unique
    /// identifier: a `"` or `\(` in a mutation name cannot end a literal or interpolate,
    /// a newline in a feature name cannot leave its comment, and a name with no ASCII letter
    /// or digit (`""`, `"+"`, `"名前"`) is not `_`. Random names, several seeds: the generated
    /// file type-checks with warnings as errors (swiftc -typecheck).
    func testGeneratedSwiftCompilesForRandomNames() throws {
        let alphabet: [String] = [
            "a", "B", "z", "_", "-", " ", "0", "9", "\"", "\\", "\\(", ")", "\n", "\t", "\u{1B}", "+", "$", "é", "名",
            "前", "self", "init", "default", "Type",
        ]
        var rng = SystemRandomNumberGenerator()
        func name(_ n: Int) -> String { (0..<n).map { _ in alphabet.randomElement(using: &rng)! }.joined() }
        var features: [FeatureDeclarations] = []
        for i in 0..<12 {
            var fields: [SchemaType.RecordField] = []
            var seen: Set<String> = []
            for _ in 0..<4 {
                let n = name(Int.random(in: 0...3, using: &rng))
                if seen.insert(n).inserted {
                    fields.append(
                        .init(
                            name: n,
                            type: [
                                .scalar(.string), .scalar(.integer), .optional(.scalar(.boolean)),
                                .enumeration([name(2), name(2) + "x"]),
                            ].randomElement(using: &rng)!))
                }
            }
            var kinds: [String: [String: Schema.Field]] = [:]
            for _ in 0..<3 {
                kinds[name(Int.random(in: 0...3, using: &rng))] = [
                    name(2): .init(type: .integer, optional: Bool.random(using: &rng)),
                    "x" + name(1): .init(type: .string, optional: false),
                ]
            }
            let fixed: [String] = ["", "+", "名前", "a\"b", "a\\(x)", "line\nbreak"]
            kinds[fixed[i % fixed.count]] = [:]
            features.append(
                FeatureDeclarations(
                    name: "f\(i)" + name(3), kind: .feature, state: .record(fields), stateIsInferred: false,
                    actions: kinds, mutations: kinds, outputs: kinds))
        }
        features.append(
            FeatureDeclarations(
                name: "名前", kind: .feature,
                state: .record([.init(name: "+", type: .scalar(.string)), .init(name: "", type: .scalar(.integer))]),
                stateIsInferred: false, actions: ["": [:], "+": [:]], mutations: ["\\(x)": [:]], outputs: ["\"": [:]]))
        let swift = SwiftTypesGenerator(features: features, command: "moonflow types --swift \"odd\npath\"").source()
        try assertTypechecks(swift)
    }

    /// Lists, maps, enums and records in action, mutation and output fields become real
    /// Swift types nested in the enum, named after the field; a record declared alike under
    /// two cases is one type; a field named `key` does not hide the enum's coding key.
    func testCompositeMessageFieldsGetRealSwiftTypes() throws {
        let line = SchemaType.record([
            .init(name: "qty", type: .scalar(.integer)), .init(name: "sku", type: .scalar(.string)),
        ])
        let actions: [String: [String: Schema.Field]] = [
            "set": [
                "lines": .init(declared: .list(line)),
                "mode": .init(declared: .optional(.enumeration(["replace", "merge"]))),
            ],
            "add": [
                "lines": .init(declared: .list(line)),
                "key": .init(declared: .record([.init(name: "id", type: .scalar(.integer))])),
            ],
            "tag": ["tags": .init(declared: .map(.list(.scalar(.string))))],
        ]
        let swift = SwiftTypesGenerator(
            features: [
                FeatureDeclarations(
                    name: "cart", kind: .feature, state: .record([]), stateIsInferred: false,
                    actions: actions, mutations: actions, outputs: actions)
            ],
            command: "moonflow types --swift cart"
        ).source()
        XCTAssertTrue(swift.contains("case set(lines: [LinesItem], mode: Mode? = nil)"), swift)
        XCTAssertTrue(swift.contains("case add(key: Key2, lines: [LinesItem])"), swift)
        XCTAssertTrue(swift.contains("case tag(tags: [String: [String]])"), swift)
        XCTAssertEqual(swift.components(separatedBy: "public struct LinesItem:").count - 1, 3, "one per enum: \(swift)")
        XCTAssertFalse(swift.contains("CartValue"), "no catch-all value type is needed")
        try assertTypechecks(swift)
        let luals = LuaLSAnnotations(
            features: [
                FeatureDeclarations(
                    name: "cart", kind: .feature, state: .record([]), stateIsInferred: false, actions: actions)
            ],
            command: "moonflow types --luals cart"
        ).source()
        XCTAssertTrue(luals.contains("---@field lines CartAction.add.lines.item[]\n"), luals)
        XCTAssertTrue(
            luals.contains("---@class CartAction.add.lines.item\n---@field qty integer\n---@field sku string\n"), luals)
        XCTAssertTrue(luals.contains("---@field mode? \"replace\"|\"merge\"\n"), luals)
    }

    /// swiftc type-checks `swift` with warnings as errors.
    private func assertTypechecks(_ swift: String, line: UInt = #line) throws {
        let (status, output) = try typecheck(swift)
        XCTAssertEqual(status, 0, "\(output)\n---\n\(swift)", line: line)
    }

    /// Runs swiftc -typecheck (warnings as errors) on `swift`; its output when it fails.
    private func typecheck(_ swift: String) throws -> (status: Int32, output: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "moonflow-types-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("Generated.swift")
        try swift.write(to: file, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swiftc", "-typecheck", "-warnings-as-errors", "-swift-version", "6", file.path]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = errors
        try process.run()
        let output = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    /// Lists (and maps, and lists of optionals) nested 30 deep: written as one `[[...]]`,
    /// the type checker took over two minutes (about twice as long per level); now no
    /// type is written more than four collections deep, each four levels named by a
    /// `typealias`, and the file compiles.
    func testDeeplyNestedListsAreNamedEveryFourLevels() throws {
        var deep = SchemaType.scalar(.integer), maps = SchemaType.record([.init(name: "id", type: .scalar(.string))]),
            optionals = SchemaType.scalar(.string)
        for _ in 0..<30 { deep = .list(deep); maps = .map(maps); optionals = .list(.optional(optionals)) }
        // And an enum of two values that are one Swift string (bytes that are not UTF-8): one case.
        let bytes = SchemaType.enumeration(.init([LuaString(bytes: [0xFF]), LuaString(bytes: [0xFE]), "ok"]))
        let state = SchemaType.record([
            .init(name: "bytes", type: bytes), .init(name: "deep", type: deep),
            .init(name: "maps", type: .optional(maps)),
            .init(name: "opt", type: optionals),
        ])
        let swift = SwiftTypesGenerator(features: feature(state), command: "moonflow types --swift x").source()
        for line in swift.split(separator: "\n") {
            var depth = 0, most = 0
            for c in line { if c == "[" { depth += 1; most = max(most, depth) } else if c == "]" { depth -= 1 } }
            XCTAssertLessThanOrEqual(most, 4, "\(line)\n---\n\(swift)")
        }
        XCTAssertTrue(swift.contains("public typealias DeepLevel26 = [[[[Int]]]]"), swift)
        XCTAssertTrue(swift.contains("public var deep: [[DeepLevel2]]"), swift)
        let (status, output) = try typecheck(swift)
        XCTAssertEqual(status, 0, "\(output)\n---\n\(swift)")
    }

    /// Names with line breaks, quotes, `]]`, control characters and bytes that are not
    /// UTF-8: `types --lua` writes Lua that loads and reads back as the declared state (a
    /// key held a raw line break), and every line `--luals` writes is a comment (a name with
    /// a line break left its comment), also when two names map to one class name.
    func testLuaAndLuaLSOutputStayLuaWhateverTheNames() throws {
        let odd = [
            "line\nbreak", "a\"b", "back\\slash", "]]", "--", "\r", "\u{0}x", "tab\there", "é", "end", "a b", "_a20b",
            "",
        ]
        let state = SchemaType.record(
            odd.sorted { LuaValue.keyOrder(.string(LuaString($0)), .string(LuaString($1))) }.map {
                .init(
                    name: $0,
                    type: .record([
                        .init(
                            name: $0,
                            type: .enumeration(
                                SchemaType.EnumValues(odd.map { LuaString($0) } + [LuaString(bytes: [0xFF, 0x0A])])))
                    ]))
            })
        let messages = Dictionary(
            uniqueKeysWithValues: odd.map { ($0, [$0: Schema.Field(type: .string, optional: false)]) })
        let features = [
            FeatureDeclarations(
                name: "odd\nname", kind: .feature, state: state, stateIsInferred: false,
                actions: messages, mutations: messages, outputs: messages, file: "plugins/x\ny/init.lua")
        ]
        let lua = try LuaState()
        let declaration = LuaStateDeclaration(features: features).source()
        let back = try lua.run(string: "return {\n" + declaration + "}", name: "types.lua")
        XCTAssertEqual(try SchemaType.read(back.first?["state"] ?? .nil, at: "state"), state, declaration)
        let luals = LuaLSAnnotations(features: features, command: "moonflow types --luals \"x\ny\"").source()
        for line in luals.split(separator: "\n") {
            XCTAssertTrue(line.hasPrefix("--"), "\(line.debugDescription)\n---\n\(luals)")
        }
        XCTAssertNoThrow(try lua.load(string: luals, name: "meta.lua"))
        // As deep as a declaration may nest, --lua still loads (100 deep, refused now, did not).
        var deep = SchemaType.scalar(.integer)
        for _ in 0..<(SchemaType.maxDepth - 1) { deep = .list(.optional(deep)) }
        let deepFeature = [
            FeatureDeclarations(
                name: "deep", kind: .feature, state: .record([.init(name: "d", type: deep)]), stateIsInferred: false)
        ]
        let deepBack = try lua.run(
            string: "return {\n" + LuaStateDeclaration(features: deepFeature).source() + "}", name: "deep.lua")
        XCTAssertEqual(try SchemaType.read(deepBack.first?["state"] ?? .nil, at: "state"), deepFeature[0].state)
        XCTAssertTrue(luals.contains("---@class OddNameAction._a20b\n"), luals)
        XCTAssertTrue(luals.contains("---@class OddNameAction._a20b2\n"), luals)
        XCTAssertTrue(luals.contains("---@class OddNameAction._linea"), luals)
    }

    /// A generated case's labels follow the order the plugin writes its fields in
    /// (`.add(sku:price:qty:name:)`), not the alphabet (`.add(name:price:qty:sku:)`, which moved
    /// every call site when a field was added). Comments, strings and comparisons in the source
    /// do not count as fields; a message the text does not spell out keeps sorted labels.
    func testCaseLabelsFollowTheOrderTheSourceWritesFieldsIn() {
        let source = """
            local mf = require "moonflow"
            -- actions = { add = { z = "string" } }   (a comment: not the declaration)
            local note = "actions = { add = { y = 1 } }"
            return mf.feature {
              name = "shop",
              actions = {
                add = { sku = "string", price = "integer", qty = "integer", name = "string" },
                ["remove"] = { sku = "string", all = "boolean?" },
                [[clear]] = {},
              },
              mutations = { added = { qty = "integer", sku = "string" } },
              handle = function(a) if a.qty == 0 then return nil end return { type = "added", sku = a.sku, qty = a.qty } end,
            }
            """
        let order = DeclarationOrder(source: source)
        XCTAssertEqual(order.order("actions", "add"), ["sku", "price", "qty", "name"])
        XCTAssertEqual(order.order("actions", "remove"), ["sku", "all"])
        XCTAssertEqual(order.order("mutations", "added"), ["qty", "sku"])
        let scalar = { (t: FlatShapes.FieldType) in Schema.Field(type: t, optional: false) }
        let actions: [String: [String: Schema.Field]] = [
            "add": [
                "sku": scalar(.string), "price": scalar(.integer), "qty": scalar(.integer), "name": scalar(.string),
            ],
            "remove": ["sku": scalar(.string), "all": Schema.Field(type: .boolean, optional: true)],
            "built": ["b": scalar(.string), "a": scalar(.string)],  // not spelled out in the text
        ]
        let declared = [
            FeatureDeclarations(
                name: "shop", kind: .feature, state: .record([]), stateIsInferred: false,
                actions: actions, order: order)
        ]
        let swift = SwiftTypesGenerator(features: declared, command: "moonflow types --swift shop").source()
        XCTAssertTrue(swift.contains("case add(sku: String, price: Int, qty: Int, name: String)"), swift)
        XCTAssertTrue(swift.contains("case remove(sku: String, all: Bool? = nil)"), swift)
        XCTAssertTrue(swift.contains("case built(a: String, b: String)"), swift)
    }

    /// A plugin written to a temporary folder and read as `moonflow types` reads it.
    private func declarations(_ source: String) throws -> [FeatureDeclarations] {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("types-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("shop.lua")
        try source.write(to: file, atomically: true, encoding: .utf8)
        return try FeatureDeclarations.load(file.path)
    }

    /// A record's initialiser takes its fields in the order the source writes them, as a case's
    /// labels do (`LinesItem(sku:qty:price:name:)`, not `LinesItem(name:price:qty:sku:)`): the
    /// state's, a record nested in it, one named by a local (`of = LINE`), an optional one, and
    /// one in an action. In a file of several features each reads its own table's order.
    func testRecordInitialisersFollowTheOrderTheSourceWritesFieldsIn() throws {
        let source = """
            local mf = require "moonflow"
            local LINE = { sku = "string", qty = "integer", price = "integer", name = "string" }
            local other = mf.feature {  -- not the one returned: its own order is its own
              name = "other", initial = { total = "x" }, state = { total = "string" },
              actions = { add = { qty = "integer", sku = "string" } }, mutations = {},
              handle = function() end, reduce = function(s) return s end,
            }
            return mf.feature {
              name = "shop",
              initial = { lines = mf.array(), total = 0, owner = { name = "", age = 0, address = { city = "" } } },
              state = {
                lines = { "list", of = LINE },
                total = "integer",
                owner = { name = "string", age = "integer", address = { zip = "string?", city = "string" } },
                best = { "record?", qty = "integer", name = "string" },
              },
              actions = { add = { sku = "string", qty = "integer" }, pick = { best = { qty = "integer", name = "string", at = "integer" } } },
              mutations = {},
              handle = function(a) if a.qty == 0 then local total = 1 return nil end end,
              reduce = function(s) return s end,
            }
            """
        let declared = try declarations(source)
        XCTAssertEqual(declared.first?.order.order(["state"]), ["lines", "total", "owner", "best"])
        XCTAssertEqual(declared.first?.order.order(["state", "lines", "of"]), ["sku", "qty", "price", "name"])
        XCTAssertEqual(DeclarationOrder(source: source, feature: "other").order("actions", "add"), ["qty", "sku"])
        let swift = SwiftTypesGenerator(features: declared, command: "moonflow types --swift shop.lua").source()
        XCTAssertTrue(
            swift.contains("public init(lines: [LinesItem], total: Int, owner: Owner, best: Best? = nil) {"), swift)
        XCTAssertTrue(swift.contains("public init(sku: String, qty: Int, price: Int, name: String) {"), swift)
        XCTAssertTrue(swift.contains("public init(name: String, age: Int, address: Address) {"), swift)
        XCTAssertTrue(swift.contains("public init(zip: String? = nil, city: String) {"), swift)
        XCTAssertTrue(swift.contains("public init(qty: Int, name: String) {"), swift)
        XCTAssertTrue(swift.contains("case add(sku: String, qty: Int)"), swift)
        XCTAssertTrue(swift.contains("public init(qty: Int, name: String, at: Int) {"), swift)
        // The properties, their coding and their patching follow the same order.
        let properties = ["lines", "total", "owner", "best"].map {
            swift.range(of: "    public var \($0): ")!.lowerBound
        }
        XCTAssertEqual(properties, properties.sorted(), swift)
    }

    /// A message's record of the same shape as one of the state's is typed with the state's
    /// struct (`case restored(lines: [CartState.LinesItem])`), so an app moves one value between
    /// them without copying it field by field; a record of another shape keeps a type of its own.
    func testAMessageRecordShapedAsTheStatesIsTheStatesType() throws {
        let source = """
            local mf = require "moonflow"
            local LINE = { sku = "string", qty = "integer" }
            return mf.feature {
              name = "cart",
              initial = { lines = mf.array() },
              state = { lines = { "list", of = LINE }, best = { "record?", sku = "string", qty = "integer" } },
              actions = { restore = { lines = { "list", of = LINE } }, pick = { line = { qty = "integer", sku = "string" } },
                          note = { line = { sku = "string" } } },
              mutations = { restored = { lines = { "list", of = LINE } }, picked = { line = LINE } },
              handle = function() end, reduce = function(s) return s end,
            }
            """
        let swift = SwiftTypesGenerator(features: try declarations(source), command: "moonflow types --swift cart.lua")
            .source()
        XCTAssertTrue(swift.contains("case restored(lines: [CartState.LinesItem])"), swift)
        XCTAssertTrue(swift.contains("case picked(line: CartState.LinesItem)"), swift)
        XCTAssertTrue(swift.contains("case restore(lines: [CartState.LinesItem])"), swift)
        XCTAssertTrue(swift.contains("case pick(line: CartState.LinesItem)"), swift)
        XCTAssertTrue(swift.contains("case note(line: Line)"), swift)
        XCTAssertEqual(swift.components(separatedBy: "struct LinesItem:").count - 1, 1, swift)
        XCTAssertTrue(
            swift.contains(
                "self = .restored(lines: try container.decode([CartState.LinesItem].self, forKey: Key(\"lines\")))"),
            swift)
    }

    /// An `mf.compose` that declares `actions` gets an `Action` enum as a feature does
    /// (`send(case: ShopAction.pay(amount: 5))`, not `send(["type": "pay"])`), its cases'
    /// labels in the source's order; its children's types follow as before. One that declares
    /// none gets no enum.
    func testACompositeThatDeclaresActionsGetsAnActionEnum() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("types-\(UUID().uuidString)")
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        func write(_ path: String, _ text: String) throws {
            let file = dir.appendingPathComponent(path)
            try FileManager.default.createDirectory(
                at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: file, atomically: true, encoding: .utf8)
        }
        try write(
            "cart/init.lua",
            """
            local mf = require "moonflow"
            return mf.feature {
              name = "cart", initial = { count = 0 }, state = { count = "integer" },
              actions = { add = { sku = "string" } }, mutations = { added = { sku = "string" } },
              handle = function(a) return { type = "added", sku = a.sku } end,
              reduce = function(s) s.count = s.count + 1; return s end,
            }
            """)
        let compose = { (actions: String) in
            """
            local mf = require "moonflow"
            return mf.compose { name = "shop", children = { cart = "cart" },
              \(actions)
              route = function(action) return "cart", action end,
              combine = function(states) return { count = states.cart.count } end }
            """
        }
        try write(
            "shop/init.lua",
            compose("actions = { pay = { amount = \"integer\", note = \"string?\" }, add = { sku = \"string\" } },"))
        let declared = try FeatureDeclarations.load(dir.appendingPathComponent("shop").path)
        XCTAssertEqual(declared.map(\.name), ["shop", "cart"])
        let swift = SwiftTypesGenerator(features: declared, command: "moonflow types --swift shop").source()
        XCTAssertTrue(swift.contains("public enum ShopAction: Encodable, Equatable, Sendable {"), swift)
        XCTAssertTrue(swift.contains("case pay(amount: Int, note: String? = nil)"), swift)
        XCTAssertTrue(swift.contains("case add(sku: String)"), swift)
        XCTAssertTrue(swift.contains("try container.encode(\"pay\", forKey: Key(\"type\"))"), swift)
        XCTAssertTrue(swift.contains("public enum CartAction: Encodable"), swift)
        XCTAssertFalse(swift.contains("ShopMutation"), swift)

        try write("shop/init.lua", compose(""))
        let undeclared = try FeatureDeclarations.load(dir.appendingPathComponent("shop").path)
        XCTAssertFalse(
            SwiftTypesGenerator(features: undeclared, command: "moonflow types --swift shop").source()
                .contains("ShopAction"))
    }
}
