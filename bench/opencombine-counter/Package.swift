// swift-tools-version:6.0
import PackageDescription

// A peer for scripts/bench: the counter feature written natively in Swift on
// OpenCombine, ReactorKit-style with state feedback. A package of its own so
// that the main package does not depend on OpenCombine.
let package = Package(
    name: "opencombine-counter",
    dependencies: [
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0")
    ],
    targets: [
        .executableTarget(
            name: "opencombine-counter",
            dependencies: [.product(name: "OpenCombine", package: "OpenCombine")]
        )
    ],
    swiftLanguageModes: [.v6]
)
