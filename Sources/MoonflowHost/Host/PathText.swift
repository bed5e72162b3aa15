import Foundation

/// Path arithmetic on the text of a path, for every path a user or a recording gives:
/// `.`, `./`, `..`, a trailing slash, `./init.lua`, relative or absolute.
///
///     PathText.parent(of: ".")              // ".."
///     PathText.parent(of: "plugins/counter/") // "plugins"
///     PathText.normalized("./init.lua")     // "init.lua"
///     PathText.name(of: ".")                // the current folder's own name
///
/// Foundation's `NSString.deletingLastPathComponent` traps (SIGILL) in this toolchain for
/// any path of one character (`.`, `a`, `é`), so Moonflow never calls it; these functions
/// are total: every string gives a path. They work on the text (`a/..` is `.`), as
/// `standardizingPath` does, and leave symbolic links alone; `name(of:)` alone asks the
/// file system, for the folder a `.` or `..` stands for.
package enum PathText {
    /// `path` with empty and `.` components dropped, `x/..` pairs folded and no trailing
    /// slash: `./plugins//counter/` is `plugins/counter`, `./` is `.`, `/..` is `/`. The
    /// empty path is `.`. Leading `..` components of a relative path stay.
    package static func normalized(_ path: String) -> String {
        let absolute = path.hasPrefix("/")
        var kept: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..":
                // above the root is the root
                if let last = kept.last, last != ".." { kept.removeLast() } else if !absolute { kept.append(part) }
            default: kept.append(part)
            }
        }
        let joined = kept.joined(separator: "/")
        if absolute { return "/" + joined }
        return joined.isEmpty ? "." : joined
    }

    /// The folder that holds `path`: `plugins/counter` → `plugins`, `counter` → `.`,
    /// `.` → `..`, `..` → `../..`, `/a` → `/`, `/` → `/`.
    package static func parent(of path: String) -> String {
        let normal = normalized(path)
        if normal == "/" { return "/" }
        if normal == "." { return ".." }
        if normal == ".." || normal.hasSuffix("/..") { return normal + "/.." }
        guard let slash = normal.lastIndex(of: "/") else { return "." }
        return slash == normal.startIndex ? "/" : String(normal[..<slash])
    }

    /// The last component of `path` as text (`plugins/counter/` → `counter`); for a path
    /// that ends in `.` or `..`, the name of the folder it stands for, read from the
    /// current directory (`.` inside `plugins/counter` → `counter`).
    package static func name(of path: String) -> String {
        var normal = normalized(path)
        if normal == "." || normal == ".." || normal.hasSuffix("/..") {
            normal = normalized(FileManager.default.currentDirectoryPath + "/" + normal)
        }
        if normal == "/" { return "/" }
        return normal.split(separator: "/").last.map(String.init) ?? normal
    }

    /// `name` inside `folder`, with no `./` in front when the folder is `.`.
    package static func join(_ folder: String, _ name: String) -> String {
        let normal = normalized(folder)
        if normal == "." { return name }
        return normal == "/" ? "/" + name : normal + "/" + name
    }
}

/// Everything under a folder, for the tools that look for plugin files, specs and files to
/// watch: paths relative to `folder`, sorted, subfolders first walked, names that start with
/// `.` left out. Symbolic links are followed (the folder itself may be one: `links/shop`),
/// each real folder walked once, so a link back up the tree ends the walk instead of looping.
/// (`FileManager.enumerator(atPath:)` lists nothing under a folder given as a link.)
package enum FolderWalk {
    package static func paths(under folder: String) -> [String] {
        var out: [String] = []
        var seen: Set<String> = []
        func walk(_ dir: String, _ prefix: String) {
            guard let real = realPath(dir), seen.insert(real).inserted else { return }
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter {
                !$0.hasPrefix(".")
            }.sorted()
            for name in names {
                let relative = prefix.isEmpty ? name : prefix + "/" + name
                out.append(relative)
                var isFolder: ObjCBool = false
                let full = PathText.join(dir, name)
                if FileManager.default.fileExists(atPath: full, isDirectory: &isFolder), isFolder.boolValue {
                    walk(full, relative)
                }
            }
        }
        walk(folder, "")
        return out
    }

    /// `path` with every symbolic link resolved (realpath); nil when it does not exist.
    package static func realPath(_ path: String) -> String? {
        guard let real = realpath(path, nil) else { return nil }
        defer { free(real) }
        return String(cString: real)
    }

    /// Where `path` really leads when that is outside `folder` (both with every symbolic link
    /// resolved), else nil: what a sandboxed plugin may not reach through a link (a module
    /// that links to a `.env` elsewhere, a database file that links to another app's).
    /// A path that does not exist yet is judged by the folder it would be made in, a link to
    /// what does not exist yet by where its target would be made.
    package static func leadsOutside(_ path: String, of folder: String) -> String? {
        guard let realFolder = realPath(folder) else { return nil }
        return leadsOutside(path, of: realFolder, links: 0)
    }

    private static func leadsOutside(_ path: String, of realFolder: String, links: Int) -> String? {
        let inside = realFolder == "/" ? "/" : realFolder + "/"
        let real: String
        if let resolved = realPath(path) {
            real = resolved
        } else if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: path) {
            // A link to what does not exist yet (opening it would make its target): judged by its target.
            guard links < 40 else { return path + " (a loop of links)" }
            return leadsOutside(
                target.hasPrefix("/") ? target : PathText.join(PathText.parent(of: path), target),
                of: realFolder, links: links + 1)
        } else {
            guard let parent = realPath(PathText.parent(of: path)) else { return nil }
            real = PathText.join(parent, PathText.name(of: path))
        }
        return real == realFolder || real.hasPrefix(inside) ? nil : real
    }
}
