import MoonflowHost
import LuaKit
import MoonflowLua

/// Which files of a plugin are its specs: what `--watch` does not reload for and what
/// `check` lints as specs.
package enum SpecFiles {
    /// Whether `file` is a spec: `*_spec.lua`, or anything in the plugin `folder`'s `spec/`.
    package static func isSpec(_ file: String, in folder: String?) -> Bool {
        if file.hasSuffix("_spec.lua") { return true }
        guard let folder else { return false }
        let root = PathText.normalized(folder), path = PathText.normalized(file)
        let inside = root == "." ? path : path.hasPrefix(root + "/") ? String(path.dropFirst(root.count + 1)) : path
        return inside.split(separator: "/").first == "spec"
    }
}
