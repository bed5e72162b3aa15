import MoonflowLua
import LuaKit

/// The `moonflow.repository` userdata class, made once per host on first use.
///
/// **Threading:** used on the host's state executor only.
final class RepositoryClassCache: @unchecked Sendable {
    private var cached: (host: ObjectIdentifier, luaClass: LuaClass)?

    func luaClass(_ host: FeatureHost) throws -> LuaClass {
        if let cached, cached.host == ObjectIdentifier(host) { return cached.luaClass }
        let luaClass = try host.lua.makeClass("moonflow.repository", methods: RepositoryService.methods(host.bridge))
        cached = (ObjectIdentifier(host), luaClass)
        return luaClass
    }
}
