import Foundation
import LuaKit
import LuaRepositories
import MoonflowLua
import Runtime

/// Repositories as Lua services: Swift ones a program registers (MoonflowRepositories), and
/// those a plugin declares.
extension FeatureHost {
    /// Exposes a repository service under its name to every feature loaded afterwards
    /// (MoonflowRepositories' `register(repository:named:)` and `register(repositoryService:)`).
    package func registerRepository(_ service: RepositoryService) {
        let classes = RepositoryClassCache(on: self)
        register(serviceObject: service.name) { host, _ in .object(service, try classes.luaClass(host)) }
    }

    /// Makes `repositories = { NAME = { seed = {...} } }` in a feature definition give that
    /// feature a repository per NAME as `env.services.NAME` (it wins over a host service of the
    /// same name): a fresh, seeded in-memory one, or with `sqlite = "FILE.db"` (and `indexes`)
    /// the one `configuration.declaredRepositoryFiles` keeps for it, if the host has that.
    func registerDeclaredRepositories() {
        let classes = RepositoryClassCache(on: self)
        register(serviceObjects: { host, definition in
            let folder = host.pluginSource.map { PathText.parent(of: $0) } ?? "."
            return try RepositoryDeclaration.all(in: definition, lua: host.lua).map { declaration in
                let repository = try host.repository(declaration, pluginFolder: folder)
                let name = declaration.name
                let service = RepositoryService(
                    name: name, repository: repository,
                    executor: SerialQueueExecutor(label: "moonflow.repository.\(name)"),
                    toLua: { $0.lua }, fromLua: { try LuaRecord(lua: $0) },
                    id: { v in
                        guard v.isIdentity else {
                            throw RepositoryServiceError("\(name): an id is an integer or a string (got \(v))")
                        }
                        return v
                    })
                return (name, .object(service, try classes.luaClass(host)))
            }
        })
    }

    /// The repository `declaration` gets. A sandboxed plugin's files stay in its data folder:
    /// a declared name with a folder that leaves it is refused.
    private func repository(
        _ declaration: RepositoryDeclaration, pluginFolder: String
    ) throws -> any Repository<LuaRecord> {
        guard let file = declaration.file, let files = configuration.declaredRepositoryFiles else {
            return InMemoryRepository<LuaRecord>(declaration.seed)
        }
        if configuration.isolatesPlugins, let reason = RepositoryDeclaration.leavesDataFolder(file) {
            throw HostError(
                "\(pluginSource ?? pluginFolder): repositories.\(declaration.name).sqlite = \"\(file)\": \(reason); "
                    + "a sandboxed plugin's database files stay in its data folder: name a file like \"\(declaration.name).db\""
            )
        }
        // Where it really is: a file (or its WAL) that is a link out of the folder would open
        // another app's database.
        if configuration.isolatesPlugins, let locating = files as? any RepositoryFileLocating,
            let (paths, folder) = locating.location(for: declaration, pluginFolder: pluginFolder)
        {
            for path in paths {
                if let real = FolderWalk.leadsOutside(path, of: folder) {
                    throw HostError(
                        "\(pluginSource ?? pluginFolder): repositories.\(declaration.name).sqlite = \"\(file)\": \(path) leads "
                            + "outside the data folder \(folder) (to \(real)); a sandboxed plugin's database files stay in its data folder"
                    )
                }
            }
        }
        do {
            return try files.repository(for: declaration, pluginFolder: pluginFolder)
        } catch let error as HostError {
            throw error
        } catch {
            throw HostError("repositories.\(declaration.name): \(error)")
        }
    }

    /// A `Record` id from a Lua id: strings as they are, integers in decimal.
    package static func recordID(_ value: RecordValue) throws -> String {
        switch value {
        case .string(let s): return s
        case .int(let i): return String(i)
        default: throw RepositoryServiceError("a record id is an integer or a string (got \(value))")
        }
    }
}
