import Foundation
import LuaKit

/// The messages between an app's host and `moonflow serve`, one JSON object per WebSocket
/// text frame, each with `"m"` naming it. The app connects to `/app?token=…`:
///
///     app ──► server                                   server ──► app
///     {"m":"hello","app":"3f…","name":"MyApp"}         {"m":"files","files":{"counter/init.lua":"…"}}
///     {"m":"started","f":1,…}  (InspectorPipe's,       {"m":"files","files":{…},"changed":["counter/init.lua"]}
///     {"m":"event","f":1,…}     with the feature's     {"m":"dispatch","f":1,"id":4,"action":{…}}
///     {"m":"input","f":1,…}     number `f`)            {"m":"restart","f":1,"id":5}
///     {"m":"reply","f":1,"id":4,"ok":true}             {"m":"inflight","f":1,"id":6}
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
        "{\"m\":\"hello\",\"app\":\(q(app)),\"name\":\(q(name))}"
    }

    /// The files message: every file, and the ones a save changed (nil: the first message).
    package static func files(_ files: [String: String], changed: [String]?) -> String {
        let body = files.keys.sorted().map { "\(q($0)):\(q(files[$0]!))" }.joined(separator: ",")
        let changedField = changed.map { ",\"changed\":[" + $0.map(q).joined(separator: ",") + "]" } ?? ""
        return "{\"m\":\"files\",\"files\":{\(body)}\(changedField)}"
    }

    /// An `InspectorPipe` line for the feature numbered `feature`.
    package static func tagged(_ line: String, feature: Int) -> String {
        "{\"f\":\(feature)," + line.dropFirst()
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

    private static func q(_ s: String) -> String { (try? LuaValue.string(LuaString(s)).json()) ?? "\"\"" }
}
