// swift-tools-version:6.0
import PackageDescription

// Dependencies flow one way (DESIGN §3):
// CLuaShim -> CLua; LuaKit -> CLua, CLuaShim; Streams has none; Runtime -> Streams;
// MoonflowLua -> LuaKit, Runtime; MoonflowHost -> MoonflowLua, MoonflowSQLite;
// MoonflowTesting -> MoonflowHost; moonflow -> MoonflowHost, MoonflowTesting, MoonflowInspector, CEditShim; CEditShim -> CEdit.
// MoonflowInspector -> MoonflowHost, Hummingbird: the `--inspect` server, kept out of the libraries an app embeds.
// MoonflowSQLite -> Runtime, GRDB: the SQLite repository, kept out of the core libraries.
let package = Package(
    name: "Moonflow",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "LuaKit", targets: ["LuaKit"]),
        .library(name: "Streams", targets: ["Streams"]),
        .library(name: "StreamsTesting", targets: ["StreamsTesting"]),
        .library(name: "Runtime", targets: ["Runtime"]),
        .library(name: "MoonflowLua", targets: ["MoonflowLua"]),
        .library(name: "MoonflowHost", targets: ["MoonflowHost"]),
        .library(name: "MoonflowTesting", targets: ["MoonflowTesting"]),
        .library(name: "MoonflowSQLite", targets: ["MoonflowSQLite"]),
        .executable(name: "moonflow", targets: ["moonflow"]),
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
        .systemLibrary(
            name: "CEdit",
            pkgConfig: "libedit",
            providers: [.apt(["libedit-dev"])]
        ),
        .target(name: "CEditShim", dependencies: ["CEdit"]),
        .target(name: "LuaKit", dependencies: ["CLua", "CLuaShim"]),
        .target(name: "Streams"),
        .target(name: "StreamsTesting", dependencies: ["Streams"]),
        .target(name: "Runtime", dependencies: ["Streams"]),
        .target(name: "MoonflowLua", dependencies: ["LuaKit", "Runtime", "Streams"]),
        // GRDB links Debian's libsqlite3 (scripts/setup installs libsqlite3-dev).
        .target(name: "MoonflowSQLite", dependencies: ["Runtime", .product(name: "GRDB", package: "GRDB.swift")]),
        .target(name: "MoonflowHost", dependencies: ["MoonflowLua", "LuaKit", "Runtime", "Streams", "MoonflowSQLite"]),
        // The test store (Swift `FeatureStore`, Lua `moonflow.test`) and the spec runner.
        .target(name: "MoonflowTesting", dependencies: ["MoonflowHost", "MoonflowLua", "LuaKit", "Streams"]),
        // The `--inspect` server and its page: kept out of the libraries an app embeds.
        .target(
            name: "MoonflowInspector",
            dependencies: [
                "MoonflowHost",
                "MoonflowLua",
                "LuaKit",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "moonflow",
            dependencies: [
                "MoonflowHost",
                "MoonflowTesting",
                "MoonflowInspector",
                "CEditShim",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Benchmarks: a program that prints figures (scripts/bench builds it in release).
        .executableTarget(
            name: "moonflow-bench",
            dependencies: ["Runtime", "Streams", "StreamsTesting", "LuaKit", "MoonflowLua", "MoonflowHost", "MoonflowSQLite"]
        ),
        .testTarget(name: "LuaKitTests", dependencies: ["LuaKit"]),
        .testTarget(name: "StreamsTests", dependencies: ["Streams", "StreamsTesting"]),
        .testTarget(name: "RuntimeTests", dependencies: ["Runtime", "Streams", "StreamsTesting"]),
        .testTarget(name: "MoonflowLuaTests", dependencies: ["MoonflowLua", "MoonflowHost", "MoonflowTesting", "LuaKit", "StreamsTesting"]),
        .testTarget(name: "MoonflowHostTests", dependencies: ["MoonflowHost", "LuaKit", "MoonflowSQLite"]),
        .testTarget(name: "MoonflowTestingTests", dependencies: ["MoonflowTesting", "MoonflowHost", "LuaKit"]),
        .testTarget(name: "MoonflowSQLiteTests", dependencies: ["MoonflowSQLite", "Runtime", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "EndToEndTests", dependencies: []),
        .testTarget(
            name: "MoonflowInspectorTests",
            dependencies: [
                "MoonflowInspector",
                "MoonflowHost",
                "MoonflowLua",
                "MoonflowTesting",
                "LuaKit",
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
