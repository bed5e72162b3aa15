import CLua
import CLuaShim

extension LuaState {
    // MARK: - Globals and modules

    /// Sets global `name` (runs `_ENV` metamethods, protected).
    public func setGlobal(_ name: String, _ value: LuaPush) throws {
        enter(); defer { leave() }
        let L = activeL
        try push([value], on: L)
        try check(mf_setglobal(L, name), L)
    }

    /// Reads global `name`, copied into Swift.
    public func global(_ name: String) throws -> LuaValue {
        enter(); defer { leave() }
        let L = activeL
        try check(mf_getglobal(L, name), L)
        defer { mf_pop(L, 1) }
        return try read(L, -1, path: name)
    }

    /// A reference to global `name` (a function, a table...).
    public func ref(global name: String) throws -> LuaRef {
        enter(); defer { leave() }
        let L = activeL
        try check(mf_getglobal(L, name), L)
        return try popRef(L)
    }

    /// Makes `require(name)` call `open` (package.preload), like a C module's `luaopen_`.
    public func preload(_ name: String, _ open: @escaping LuaFunction) throws {
        enter(); defer { leave() }
        let L = activeL
        try push([.function(open)], on: L)
        try check(mf_preload(L, name), L)
    }

    /// Registers a class of Swift objects that Lua sees as userdata with `methods`.
    /// - Parameters:
    ///   - methods: Swift methods by name.
    ///   - luaMethods: methods written in Lua (functions already in the state).
    public func makeClass(
        _ name: String, methods: [String: LuaFunction], luaMethods: [String: LuaRef] = [:]
    ) throws -> LuaClass {
        enter(); defer { leave() }
        let L = activeL
        let stack = StackGuard(L)  // back at its top on success too: the metatable call takes the table
        try push(.table(LuaTable()), on: L)
        let entries =
            methods.map { ($0.key, LuaPush.function($0.value)) } + luaMethods.map { ($0.key, LuaPush.ref($0.value)) }
        for (method, fn) in entries.sorted(by: { $0.0 < $1.0 }) {
            try push([.value(.string(LuaString(method))), fn], on: L)
            try check(mf_rawset(L, stack.top + 1), L)
        }
        var ref: Int32 = 0
        try check(name.withCString { mf_new_object_metatable(L, $0, &ref) }, L)
        return LuaClass(name: name, ref: ref, state: self)
    }
}
