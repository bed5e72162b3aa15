import CLua
import CLuaShim

/// Declared shapes of flat tables (`{ type = "add", n = 1 }`), compiled once so
/// that a table still in Lua can be checked in place: no copy into Swift, no
/// allocation, no metamethod.
///
///     let shapes = FlatShapes(["add": ["n": .init(type: .integer)], "set": ["value": .init(type: .integer)]])
///     lua.call(handle, args) { slots in slots.matches(1, shapes) }   // true: reduce may take the table as it is
///
/// A check answers only "certainly fine": anything it does not vouch for (a
/// nested table, a metatable, a NaN or an infinity, an undeclared field, more fields than it
/// looks at) is left to the caller's full reading and validation, which then
/// names the problem. So the fast answer never accepts what the slow path refuses.
public struct FlatShapes: Sendable {
    /// What a field may hold, as a schema declares it (`"integer"`; a trailing `?` makes it optional).
    public enum FieldType: String, Sendable, CaseIterable { case string, integer, number, boolean, table, any }

    /// One declared field.
    public struct Field: Sendable {
        public let type: FieldType
        public let optional: Bool
        public init(type: FieldType, optional: Bool = false) {
            self.type = type
            self.optional = optional
        }
    }

    struct CompiledField {
        let name: [UInt8]
        let type: FieldType
        let optional: Bool
    }

    struct Shape {
        let name: [UInt8]
        let fields: [CompiledField]
        let required: Int
    }

    let shapes: [Shape]
    /// Each shape's name as a Lua string, made once: what `matchedType` answers.
    let types: [LuaValue]

    /// - Parameter shapes: by name (the value of `type`), the declared fields.
    public init(_ shapes: [String: [String: Field]]) {
        self.shapes = shapes.sorted { $0.key < $1.key }.map { name, fields in
            let compiled = fields.sorted { $0.key < $1.key }.map {
                CompiledField(name: Array($0.key.utf8), type: $0.value.type, optional: $0.value.optional)
            }
            return Shape(name: Array(name.utf8), fields: compiled, required: compiled.filter { !$0.optional }.count)
        }
        types = self.shapes.map { .string(LuaString(bytes: $0.name)) }
    }

    /// The shapes as a table for the check in C that the host's Lua code calls
    /// (`LuaState.flatCheckFunction`; the same answers as `matches`): by type name,
    /// `{ { field = code }, required }`, the code 1 string, 2 integer, 3 number, 4 boolean,
    /// 5 table, 6 any, negative when the field is optional.
    package var luaTable: LuaValue {
        var byType: [LuaValue: LuaValue] = [:]
        for shape in shapes {
            var fields: [LuaValue: LuaValue] = [:]
            for field in shape.fields {
                let code = Int64(FieldType.allCases.firstIndex(of: field.type)! + 1)
                fields[.string(LuaString(bytes: field.name))] = .integer(field.optional ? -code : code)
            }
            byType[.string(LuaString(bytes: shape.name))] = .table(
                LuaTable(array: [.table(LuaTable(hash: fields)), .integer(Int64(shape.required))]))
        }
        return .table(LuaTable(hash: byType))
    }
}

extension LuaSlots {
    /// Whether the value at `i` is a table without a metatable whose string `type`
    /// names one of `shapes`, whose other keys are that shape's fields, each holding
    /// a string, boolean or number (finite) of its declared type, and which has
    /// every required field. Reads raw, never raises, never allocates.
    /// Stack effect: none (needs two free slots).
    package func matches(_ i: Int, _ shapes: FlatShapes) -> Bool { matchedType(i, shapes) != nil }

    /// `matches`, answering with the `type` of the shape matched (a string made once, when
    /// the shapes were compiled), or nil.
    package func matchedType(_ i: Int, _ shapes: FlatShapes) -> LuaValue? {
        guard i >= 1 && i <= count, mf_checkstack(L, 3) != 0 else { return .none }
        let t = base + Int32(i)
        guard mf_type(L, t) == LUA_TTABLE, mf_metatable_kind(L, t) == 0 else { return .none }
        guard let index = shapeNamed(at: t, in: shapes) else { return .none }
        let shape = shapes.shapes[index]
        let stack = StackGuard(L)  // drops the key and value an early `return false` leaves
        _ = stack
        var required = 0
        lua_pushnil(L)
        while mf_next(L, t) != 0 {
            // Key at -2, value at -1.
            guard mf_type(L, -2) == LUA_TSTRING else { return .none }
            var len = 0
            let key = UnsafeRawBufferPointer(start: mf_tostring_raw(L, -2, &len), count: len)
            if !key.elementsEqual("type".utf8) {
                guard let field = shape.fields.first(where: { $0.name.elementsEqual(key) }), holds(field.type) else {
                    return .none
                }
                if !field.optional { required += 1 }
            }
            mf_pop(L, 1)
        }
        // `.none`, not `nil`: beside a `LuaValue`, `nil` would be `LuaValue.nil`, which is a value.
        return required == shape.required ? shapes.types[index] : .none
    }

    /// The shape the string at `t.type` names (found by walking the keys: a raw get
    /// by a string key would have to push the key, which may allocate).
    private func shapeNamed(at t: Int32, in shapes: FlatShapes) -> Int? {
        let stack = StackGuard(L)  // drops the key and value left where the walk stops
        _ = stack
        lua_pushnil(L)
        while mf_next(L, t) != 0 {
            if mf_type(L, -2) == LUA_TSTRING {
                var len = 0
                let key = UnsafeRawBufferPointer(start: mf_tostring_raw(L, -2, &len), count: len)
                if key.elementsEqual("type".utf8) {
                    guard mf_type(L, -1) == LUA_TSTRING else { return nil }
                    var nameLength = 0
                    let name = UnsafeRawBufferPointer(start: mf_tostring_raw(L, -1, &nameLength), count: nameLength)
                    return shapes.shapes.firstIndex { $0.name.elementsEqual(name) }
                }
            }
            mf_pop(L, 1)
        }
        return nil
    }

    /// Whether the value on top is a plain scalar of `type` (tables are left to the full reading).
    private func holds(_ type: FlatShapes.FieldType) -> Bool {
        switch mf_type(L, -1) {
        case LUA_TSTRING: return type == .string || type == .any
        case LUA_TBOOLEAN: return type == .boolean || type == .any
        case LUA_TNUMBER:
            if mf_isinteger(L, -1) != 0 { return type == .integer || type == .number || type == .any }
            let d = lua_tonumberx(L, -1, nil)
            return d.isFinite && (type == .number || type == .any)
        default: return false
        }
    }
}
