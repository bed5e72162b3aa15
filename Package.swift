// swift-tools-version:6.0
import PackageDescription

// Dependencies flow one way (DESIGN §3):
// CLuaShim -> CLua; LuaKit -> CLua, CLuaShim; Streams has none; Runtime -> Streams;
// MoonflowLua -> LuaKit, Runtime; MoonflowHost -> MoonflowLua; moonflow -> MoonflowHost, CEditShim -> CEdit.
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
        .executable(name: "moonflow", targets: ["moonflow"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
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
        .target(name: "MoonflowHost", dependencies: ["MoonflowLua", "LuaKit", "Runtime", "Streams", "StreamsTesting"]),
        .executableTarget(
            name: "moonflow",
            dependencies: [
                "MoonflowHost",
                "CEditShim",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Benchmarks: a program that prints figures (scripts/bench builds it in release).
        .executableTarget(
            name: "moonflow-bench",
            dependencies: ["Runtime", "Streams", "StreamsTesting", "LuaKit", "MoonflowLua", "MoonflowHost"]
        ),
        .testTarget(name: "LuaKitTests", dependencies: ["LuaKit"]),
        .testTarget(name: "StreamsTests", dependencies: ["Streams", "StreamsTesting"]),
        .testTarget(name: "RuntimeTests", dependencies: ["Runtime", "Streams", "StreamsTesting"]),
        .testTarget(name: "MoonflowLuaTests", dependencies: ["MoonflowLua", "MoonflowHost", "LuaKit", "StreamsTesting"]),
        .testTarget(name: "MoonflowHostTests", dependencies: ["MoonflowHost", "LuaKit"]),
        .testTarget(name: "EndToEndTests", dependencies: []),
    ],
    swiftLanguageModes: [.v6]
)
