// `import MoonflowRepositories`: Swift repositories as Lua services (`register(repository:)`),
// the store of plugins' declared repositories (`repositoryFiles`), and the types they are
// made of, which LuaRepositories (below MoonflowHost: every host serves declared
// repositories) declares and this module hands on one by one.
@_exported import class LuaRepositories.RepositoryService
@_exported import struct LuaRepositories.RepositoryServiceError
@_exported import struct LuaRepositories.LuaRecord
@_exported import struct LuaRepositories.RepositoryDeclaration
@_exported import protocol LuaRepositories.RepositoryFiles
