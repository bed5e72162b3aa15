// swift-tools-version:6.1
import PackageDescription

// Modules by who uses them; docs/architecture.md draws the graph and says why.
// An app that embeds Moonflow links MoonflowHost (and, as it chooses, MoonflowHostTools for
// every event, the virtual clock, plugin sources, reloads and the dev server;
// MoonflowRepositories for Swift repositories; MoonflowSQLite for declared repositories in
// files); tests link MoonflowTesting; only the `moonflow` tool links MoonflowTool,
// ArgumentParser and the prompt's shim (which loads libedit when the prompt opens); both
// executables link MoonflowRun, the run of a feature; only `moonflow-inspector`, the child
// `moonflow run --inspect` starts and `moonflow serve` becomes, links MoonflowInspector and
// MoonflowServe (Hummingbird, SwiftNIO), so that `moonflow` starts fast.
//
// Traits keep an app's resolution small: every use of another package's product is guarded
// by one, so an app that depends on Moonflow with `traits: []` and names MoonflowHost
// resolves no other package (scripts/check-app-resolve checks it; docs/embedding.md has
// the lines). The default traits enable all, so `swift build` here builds everything.

// The trait each use of another package's product is guarded by.
let sqlite: TargetDependencyCondition? = .when(traits: ["SQLite"])
let inspector: TargetDependencyCondition? = .when(traits: ["Inspector"])
let tool: TargetDependencyCondition? = .when(traits: ["Tool"])

let package = Package(
    name: "Moonflow",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "LuaKit", targets: ["LuaKit"]),
        .library(name: "Streams", targets: ["Streams"]),
        .library(name: "StreamsTesting", targets: ["StreamsTesting"]),
        .library(name: "Runtime", targets: ["Runtime"]),
        .library(name: "MoonflowLua", targets: ["MoonflowLua"]),
        .library(name: "MoonflowHost", targets: ["MoonflowHost"]),
        .library(name: "MoonflowHostTools", targets: ["MoonflowHostTools"]),
        .library(name: "MoonflowRepositories", targets: ["MoonflowRepositories"]),
        .library(name: "MoonflowTesting", targets: ["MoonflowTesting"]),
        .library(name: "MoonflowSQLite", targets: ["MoonflowSQLite"]),
        .library(name: "MoonflowEvents", targets: ["MoonflowEvents"]),
        .library(name: "MoonflowInspector", targets: ["MoonflowInspector"]),
        .executable(name: "moonflow", targets: ["moonflow"]),
        .executable(name: "moonflow-inspector", targets: ["moonflow-inspector"]),
        .executable(name: "moonflow-lua", targets: ["moonflow-lua"]),
    ],
    traits: [
        .trait(name: "SQLite", description: "MoonflowSQLite: SQLite repositories and the file store for declared ones (GRDB)."),
        .trait(name: "Inspector", description: "MoonflowInspector and MoonflowServe: the inspector's page and moonflow serve (Hummingbird, SwiftNIO)."),
        .trait(name: "Tool", description: "The moonflow command-line tool (ArgumentParser); its runs keep repositories in SQLite.",
               enabledTraits: ["SQLite"]),
        .default(enabledTraits: ["SQLite", "Inspector", "Tool"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        // Already under Hummingbird; named so the inspector can quiet its logger and read the bound port.
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
    ],
    targets: [
        // Linked dynamically against Debian's liblua5.4.so: native Lua C modules
        // (cjson.so) resolve their lua_* symbols from that shared library, so the
        // host needs no --export-dynamic.
        .systemLibrary(
            name: "CLua",
            pkgConfig: "lua5.4",
            providers: [.apt(["liblua5.4-dev"])]
        ),
        .target(name: "CLuaShim", dependencies: ["CLua"]),
        // The prompt's line editor: Debian's libedit (history, completion) behind a small C shim.
        // CEdit is libedit-dev's header alone (no pkgConfig: its `-ledit` would link it); the
        // shim loads libedit.so.2 with dlopen when the prompt opens, so `moonflow` starts
        // without mapping it (scripts/check-tool checks the binary's NEEDED entries).
        .systemLibrary(name: "CEdit"),
        .target(name: "CEditShim", dependencies: ["CEdit"]),
        .target(name: "LuaKit", dependencies: ["CLua", "CLuaShim"],
                resources: [.embedInCode("Lua/sandbox.lua"), .embedInCode("Lua/text_searcher.lua"),
                            .embedInCode("Lua/compiled/sandbox.luac"), .embedInCode("Lua/compiled/text_searcher.luac")]),
        .target(name: "Streams"),
        .target(name: "StreamsTesting", dependencies: ["Streams"]),
        .target(name: "Runtime", dependencies: ["Streams"]),
        .target(name: "MoonflowLua", dependencies: ["LuaKit", "Runtime", "Streams"],
                resources: [.embedInCode("Lua/dispatch.lua"), .embedInCode("Lua/markers.lua"), .embedInCode("Lua/task_await.lua"),
                            .embedInCode("Lua/compiled/dispatch.luac"), .embedInCode("Lua/compiled/markers.luac"),
                            .embedInCode("Lua/compiled/task_await.luac")]),
        // Repositories as Lua services: what every host serves plugins' declared repositories
        // with (apps name these types through MoonflowRepositories, which re-exports them).
        .target(name: "LuaRepositories", dependencies: ["MoonflowLua", "LuaKit", "Runtime", "Streams"]),
        // What an app embeds: the feature host, its plugins, sandbox and services.
        .target(name: "MoonflowHost", dependencies: ["LuaRepositories", "MoonflowLua", "LuaKit", "Runtime", "Streams", "MoonflowDebug"],
                resources: [.embedInCode("Lua/plugin_sandbox.lua"), .embedInCode("Lua/package_root.lua"),
                            .embedInCode("Lua/reload.lua"), .embedInCode("Lua/loaded_files.lua")]),
        // What tools, tests and debug builds drive a host with beyond an app's everyday surface:
        // every event (observe), the virtual clock, plugin sources, reloading from Swift.
        .target(name: "MoonflowHostTools", dependencies: ["MoonflowHost", "MoonflowLua", "LuaKit", "Streams"]),
        // Swift repositories registered as Lua services, and the store of plugins' declared
        // ones (`repositoryFiles`), with LuaRepositories' types: what an app with repositories imports.
        .target(name: "MoonflowRepositories", dependencies: ["MoonflowHost", "LuaRepositories", "LuaKit", "Runtime"]),
        // SQLite repositories, and the file store for plugins' declared ones (opt-in for apps).
        // GRDB links Debian's libsqlite3 (scripts/setup installs libsqlite3-dev).
        .target(name: "MoonflowSQLite", dependencies: ["LuaRepositories", "MoonflowHost", "Runtime", .product(name: "GRDB", package: "GRDB.swift", condition: sqlite)]),
        // The test store for apps: Swift `FeatureStore`, Lua `moonflow.test`, and MoonflowEvents' `StateDiff` re-exported.
        .target(name: "MoonflowTesting", dependencies: ["MoonflowEvents", "MoonflowHost", "MoonflowHostTools", "MoonflowLua", "LuaKit", "Streams"],
                resources: [.embedInCode("Lua/moonflow_test.lua"), .embedInCode("Lua/preload.lua"), .embedInCode("Lua/explore.lua"), .embedInCode("Lua/generators.lua"), .embedInCode("Lua/guide.lua")]),
        // A run's events as JSON lines and text: what `moonflow run` prints, recordings keep and the inspector sends;
        // and `StateDiff`, the diff by path the test store prints, replay reports and the inspector shows.
        .target(name: "MoonflowEvents", dependencies: ["MoonflowHost", "MoonflowHostTools", "MoonflowLua", "LuaKit"]),
        // The debugger: the Debug Adapter Protocol an editor speaks, for the run to drive.
        .target(name: "MoonflowDebug", dependencies: ["LuaKit"]),
        // The run of a feature, which both executables link: its clocks, its input and prompt
        // commands, the stuck-state rebuild, --watch's reloads, --record, and the inspector's rerun.
        .target(name: "MoonflowRun", dependencies: ["MoonflowDebug", "MoonflowEvents", "MoonflowSQLite", "MoonflowHost", "MoonflowHostTools", "MoonflowRepositories", "MoonflowLua", "LuaKit", "Streams"]),
        // The command-line tool's other work: replay, check, new, exec, types, the spec runner, --inspect's child.
        .target(name: "MoonflowTool", dependencies: ["MoonflowDebug", "MoonflowRun", "MoonflowHost", "MoonflowHostTools", "MoonflowEvents", "MoonflowTesting", "MoonflowSQLite", "MoonflowLua", "LuaKit", "Runtime", "Streams"],
                resources: [.embedInCode("Specs/spec_driver.lua"), .embedInCode("Plugins/lint_config.lua"),
                            .embedInCode("Types/moonflow_meta.lua")]),
        // The `--inspect` server and its page: a library an app may link in debug builds.
        .target(
            name: "MoonflowInspector",
            dependencies: [
                "MoonflowHost",
                "MoonflowEvents",
                "MoonflowLua",
                "LuaKit",
                "Streams",
                .product(name: "Hummingbird", package: "hummingbird", condition: inspector),
                .product(name: "HummingbirdCore", package: "hummingbird", condition: inspector),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket", condition: inspector),
                .product(name: "Logging", package: "swift-log", condition: inspector),
                .product(name: "NIOCore", package: "swift-nio", condition: inspector),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: inspector),
            ],
            resources: [.embedInCode("Page/inspector.html"), .embedInCode("Page/inspector.js")]
        ),
        // `moonflow serve`: the dev server apps connect to (DevServer), its watcher and terminal.
        .target(
            name: "MoonflowServe",
            dependencies: [
                "MoonflowDebug",
                "MoonflowInspector",
                "MoonflowRun",
                "MoonflowEvents",
                "MoonflowHost",
                "MoonflowLua",
                "LuaKit",
                "Streams",
                .product(name: "Hummingbird", package: "hummingbird", condition: inspector),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket", condition: inspector),
                .product(name: "NIOCore", package: "swift-nio", condition: inspector),
            ]
        ),
        .executableTarget(
            name: "moonflow",
            dependencies: [
                "MoonflowTool",
                "MoonflowRun",
                "MoonflowHost",
                "MoonflowHostTools",
                "MoonflowEvents",
                "MoonflowSQLite",
                "MoonflowTesting",
                "MoonflowDebug",
                "LuaKit",
                "CEditShim",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: tool),
            ]
        ),
        // The inspector's server for `moonflow run --inspect`, which starts it beside itself and
        // feeds it the run over pipes (Sources/MoonflowHost/DevServerLink/InspectorPipe.swift),
        // and `moonflow serve`'s, which execs it as `moonflow-inspector serve`.
        .executableTarget(
            name: "moonflow-inspector",
            dependencies: ["MoonflowServe", "MoonflowInspector", "MoonflowRun", "MoonflowEvents", "MoonflowHost", "MoonflowLua", "LuaKit"]
        ),
        // `moonflow exec` under one word, for `arg`'s lowest index (the C library alone).
        .executableTarget(name: "moonflow-lua"),
        // An app's view of Moonflow: MoonflowHost alone (scripts/check-example checks what it links).
        .executableTarget(name: "embedding-example", dependencies: ["MoonflowHost"], path: "examples/embedding"),
        // A notes screen in Lua driven as a SwiftUI app drives it (a main-actor host, scopes, fields).
        .target(name: "NotesExample", dependencies: ["MoonflowHost", "MoonflowHostTools", "LuaKit"], path: "examples/notes",
                resources: [.copy("plugins")]),
        // A checkout composed in Lua (cart, address, payment) whose cart clears on the receipt in
        // Lua; the app brings the payment provider as a Swift service.
        .target(name: "ShopExample", dependencies: ["MoonflowHost", "MoonflowHostTools"], path: "examples/shop",
                resources: [.copy("plugins")]),
        // An app for `moonflow serve`'s end-to-end tests (MoonflowServeTests runs it): MoonflowHost,
        // and MoonflowHostTools for the dev server link and its events.
        .executableTarget(name: "moonflow-serve-testapp", dependencies: ["MoonflowHost", "MoonflowHostTools"], path: "Tests/ServeTestApp"),
        // An app's main (a plain one and an `async` one) driving a main-actor host, for EndToEndTests
        // (MoonflowHostTools: its observers).
        .executableTarget(name: "moonflow-embedding-probe", dependencies: ["MoonflowHost", "MoonflowHostTools", "LuaKit"], path: "Tests/EmbeddingProbe"),
        // Benchmarks: a program that prints figures (scripts/bench builds it in release).
        .executableTarget(
            name: "moonflow-bench",
            dependencies: ["Runtime", "Streams", "LuaKit", "MoonflowLua", "MoonflowHost", "MoonflowHostTools", "MoonflowSQLite", "MoonflowDebug"]
        ),
        .testTarget(name: "LuaKitTests", dependencies: ["LuaKit"]),
        .testTarget(name: "StreamsTests", dependencies: ["Streams", "StreamsTesting"]),
        .testTarget(name: "RuntimeTests", dependencies: ["Runtime", "Streams", "StreamsTesting"]),
        // The Lua layer alone, on a small harness of its own (what the host assembles is tested in MoonflowHostTests).
        .testTarget(name: "MoonflowLuaTests", dependencies: ["MoonflowLua", "LuaKit", "Runtime", "Streams", "StreamsTesting", "PluginFixtures"]),
        // Plugin folders, the probe feature, what the two harnesses share, the resident-memory
        // reading, and the page's WebSocket client and raw HTTP requests the inspector's and
        // serve's tests share, for the test targets above and below.
        .target(name: "PluginFixtures", dependencies: ["MoonflowLua", "LuaKit", "Streams", "StreamsTesting"], path: "Tests/PluginFixtures"),
        // The host's own tests, and the host with MoonflowSQLite's file store for declared repositories.
        .testTarget(name: "MoonflowHostTests", dependencies: ["MoonflowHost", "MoonflowHostTools", "MoonflowRepositories", "MoonflowLua", "LuaKit", "MoonflowTesting", "MoonflowSQLite", "StreamsTesting", "PluginFixtures", "Runtime", "Streams"]),
        .testTarget(name: "MoonflowTestingTests", dependencies: ["MoonflowTesting", "MoonflowHost", "MoonflowHostTools", "MoonflowLua", "LuaKit"]),
        .testTarget(name: "MoonflowEventsTests", dependencies: ["MoonflowEvents", "MoonflowHost", "MoonflowHostTools", "MoonflowLua", "LuaKit"]),
        .testTarget(name: "MoonflowDebugTests", dependencies: ["MoonflowDebug", "LuaKit", "MoonflowHost", "MoonflowHostTools", "MoonflowRun", "MoonflowInspector", "PluginFixtures"]),
        .testTarget(name: "MoonflowRunTests", dependencies: ["MoonflowRun", "MoonflowHost", "MoonflowEvents", "MoonflowLua", "LuaKit", "PluginFixtures"]),
        .testTarget(name: "MoonflowToolTests", dependencies: ["MoonflowTool", "MoonflowHost", "MoonflowEvents", "MoonflowTesting", "MoonflowLua", "LuaKit", "Streams"]),
        .testTarget(name: "NotesExampleTests", dependencies: ["NotesExample", "MoonflowHost", "LuaKit"]),
        // The checkout example under Swift Testing's parallel run, with the async test store.
        .testTarget(name: "ShopExampleTests", dependencies: ["ShopExample", "MoonflowHost", "MoonflowTesting"]),
        // The Swift types `moonflow types --swift` generates for the example plugins (Generated/,
        // checked in; scripts/types writes them), compiled and run against the plugins themselves.
        .testTarget(name: "GeneratedTypesTests", dependencies: ["MoonflowHost", "MoonflowHostTools", "MoonflowRepositories", "MoonflowSQLite", "MoonflowTesting", "LuaKit"]),
        .testTarget(name: "MoonflowSQLiteTests", dependencies: ["MoonflowSQLite", "Runtime", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "EndToEndTests", dependencies: []),
        .testTarget(
            name: "MoonflowInspectorTests",
            dependencies: [
                "MoonflowInspector",
                "MoonflowRun",
                "MoonflowTool",
                "MoonflowEvents",
                "MoonflowHost",
                "MoonflowHostTools",
                "MoonflowLua",
                "MoonflowTesting",
                "LuaKit",
                "PluginFixtures",
                .product(name: "Hummingbird", package: "hummingbird"),
            ]
        ),
        // `moonflow serve` through the built binaries with a real app (moonflow-serve-testapp)
        // and an editor (MoonflowDebug's DAP client), and its pusher alone.
        .testTarget(name: "MoonflowServeTests", dependencies: ["MoonflowServe", "MoonflowDebug", "LuaKit", "PluginFixtures"]),
    ],
    swiftLanguageModes: [.v6]
)

// scripts/test's ThreadSanitizer phase sets MOONFLOW_CONCURRENT_TESTS: its build declares only
// the test targets whose code runs on more than one thread at once (those it runs, all of
// them), and none of the inspector's server, so it compiles no SwiftNIO or Hummingbird.
if Context.environment["MOONFLOW_CONCURRENT_TESTS"] != nil {
    let concurrent: Set = ["StreamsTests", "RuntimeTests", "MoonflowLuaTests", "MoonflowHostTests", "MoonflowTestingTests",
                           "MoonflowSQLiteTests", "MoonflowEventsTests", "MoonflowToolTests", "MoonflowDebugTests"]
    let servers: Set = ["MoonflowInspector", "MoonflowServe", "moonflow-inspector", "moonflow-serve-testapp"]
    package.targets.removeAll { ($0.type == .test && !concurrent.contains($0.name)) || servers.contains($0.name) }
    // The one debugger test that opens a step from the inspector's page needs its server.
    for target in package.targets where target.name == "MoonflowDebugTests" {
        target.dependencies.removeAll { "\($0)".contains("MoonflowInspector") }
        target.exclude.append("OpenStepTests.swift")
    }
    package.products.removeAll { servers.contains($0.name) }
}
