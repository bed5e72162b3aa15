import Foundation
import LuaKit

/// The messages between an app's host and `moonflow serve`, one JSON object per WebSocket
/// text frame, each with `"m"` naming it. The app connects to `/app?token=…`:
///
///     app ──► server                                   server ──► app
///     {"m":"hello","app":"3f…","name":"MyApp"}         {"m":"files","files":{"counter/init.lua":"…"}}
///     {"f":1,"m":"started",…}  (InspectorPipe's,       {"m":"files","files":{…},"changed":["counter/init.lua"]}
///     {"f":1,"m":"event",…}     with the feature's     {"f":1,"m":"dispatch","id":4,"action":{…}}
///     {"f":1,"m":"input",…}     number `f`)            {"f":1,"m":"restart","id":5}
///     {"f":1,"m":"reply","id":4,"ok":true}             {"f":1,"m":"inflight","id":6}
///
/// - **Files.** The server's first message is every `.lua` file of the folders it serves,
///   by `PLUGIN/PATH`; each save after is the same message with `changed`, the files the save
///   changed (a removed file is absent from `files`). `files` is always the whole set, so an
///   app that reconnects after edits finds what changed by comparing.
/// - **A feature's session.** For each feature the app loads from the server, the app sends
///   what `InspectorPipe` has `moonflow run` send its inspector (`started`, `event`, `input`),
///   each tagged with the feature's number `f`; the server's `dispatch`, `restart` and
///   `inflight` name the feature the same way and the app answers each with a `reply`.
/// - **Ends.** Either side may close; the app reconnects, and says `hello` and each
///   feature's `started` again.
package enum DevServerMessages {
    /// The path apps connect to (with `?token=`).
    package static let appPath = "/app"

    package static func hello(app: String, name: String) -> String {
        var line = JSONObjectWriter()
        line.add("m", "hello")
        line.add("app", app)
        line.add("name", name)
        return line.text
    }

    /// The files message: every file, and the ones a save changed (nil: the first message).
    package static func files(_ files: [String: String], changed: [String]?) -> String {
        var body = JSONObjectWriter()
        for name in files.keys.sorted() { body.add(name, files[name]!) }
        var line = JSONObjectWriter()
        line.add("m", "files")
        line.add("files", body)
        if let changed { line.add("changed", changed) }
        return line.text
    }

    /// A Debug Adapter Protocol message relayed over the link (`serve --debug`), JSON already.
    package static func dap(_ message: String) -> String {
        var line = JSONObjectWriter()
        line.add("m", "dap")
        line.add("msg", raw: message)
        return line.text
    }

    /// The editor went away (`serve --debug`).
    package static var dapEnd: String {
        var line = JSONObjectWriter()
        line.add("m", "dap-end")
        return line.text
    }

    /// A message read: its name, its feature number if it has one, and the whole object.
    package struct Message {
        package let m: String
        package let feature: Int?
        package let object: LuaValue
    }

    package static func read(_ text: String) -> Message? {
        guard let object = try? LuaValue(json: text), case .string(let m)? = object["m"] else { return nil }
        return Message(m: m.description, feature: object["f"]?.intValue.map(Int.init), object: object)
    }

    /// The `files` of a files message, and its `changed` (nil in the first message).
    package static func files(_ message: Message) -> (files: [String: String], changed: [String]?)? {
        guard message.m == "files", case .table(let t)? = message.object["files"] else { return nil }
        var files: [String: String] = [:]
        for (k, v) in t.entries {
            guard let k = k.stringValue, let v = v.stringValue else { return nil }
            files[k] = v
        }
        var changed: [String]?
        if case .table(let c)? = message.object["changed"] { changed = c.array.compactMap(\.stringValue) }
        return (files, changed)
    }

}
