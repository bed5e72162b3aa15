import LuaKit
import LuaRepositories
import MoonflowLua
import Runtime

/// The `moonflow.repository` userdata class, made once per host on first use.
///
/// **Threading:** used on the state executor of the host that made it only (checked in debug builds).
final class RepositoryClassCache: Sendable {
    private let cached: ExecutorBound<(host: ObjectIdentifier, luaClass: LuaClass)?>

    init(on host: FeatureHost) {
        cached = host.stateBound(nil)
    }

    func luaClass(_ host: FeatureHost) throws -> LuaClass {
        if let cached = cached.value, cached.host == ObjectIdentifier(host) { return cached.luaClass }
        let luaClass = try host.lua.makeClass("moonflow.repository", methods: RepositoryService.methods(host.bridge))
        cached.value = (ObjectIdentifier(host), luaClass)
        return luaClass
    }
}
