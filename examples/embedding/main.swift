// A Swift program that embeds Moonflow the way an app does: it links MoonflowHost
// alone, loads the counter plugin, sends it actions and prints its states as they
// change. scripts/check-example builds it and checks that it links no SQLite, NIO,
// Hummingbird or ArgumentParser and none of the command-line tool's code. What tests
// and tools use more (every event, the virtual clock, plugin sources, reloading, the
// dev server) is `import MoonflowHostTools`; Swift repositories `import
// MoonflowRepositories` (docs/embedding.md, "Public types by product").
//
//     swift run embedding-example            # from the repository's root: plugins/counter
//     swift run embedding-example PLUGINS    # another folder of plugins
import MoonflowHost

@main
struct EmbeddingExample {
    static func main() async throws {
        let plugins = CommandLine.arguments.dropFirst().first ?? "plugins"
        let host = try FeatureHost(configuration: .init(searchPaths: [plugins]))
        let counter = try await host.load("counter")
        let states = counter.states  // the current state, then each change
        counter.start()
        let actions: [LuaValue] = [["type": "increment", "by": 9], ["type": "increment"], ["type": "decrement"]]
        for action in actions { try counter.send(action) }
        var passedTen = false
        for await state in states {
            print(state)
            if state["count"] == 10 { passedTen = true }
            if passedTen, state["count"] == 9 { break }  // the decrement: the last action
        }
    }
}
