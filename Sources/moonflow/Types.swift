import ArgumentParser
import Foundation
import LuaKit
import MoonflowHost
import MoonflowTool

struct Types: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "types",
        abstract: "Print a plugin's declared types: its state declaration in Lua, Swift types, or LuaLS annotations.",
        discussion: """
            The feature's declarations (state, actions, mutations, outputs) are the one source: \
            --lua prints the `state = { ... }` declaration to paste into the feature (the one \
            inferred from `initial` when it declares none); --swift a Swift file with a Codable \
            <Name>State, an <Name>Action enum for send(case:), and <Name>Mutation and <Name>Effect \
            enums that decode by `type`; --luals a ---@meta file of LuaLS classes for the state, \
            actions, mutations and outputs. For an mf.compose, its children's types come too. \
            --luals --api (no PATH) prints the annotations of the moonflow and moonflow.test \
            modules. Only the plugin's top level runs: handle and reduce are not called.

            Examples:
              moonflow types --lua plugins/counter
              moonflow types --swift plugins/counter -o Sources/App/Counter.swift
              moonflow types --luals plugins/counter -o types/luals/counter.lua
              moonflow types --luals --api -o types/luals/moonflow.lua
            """
    )

    @Flag(name: .long, help: "Print the state declaration as Lua source to paste into the feature.")
    var lua = false

    @Flag(name: .long, help: "Print Swift types for the state, actions, mutations and outputs.")
    var swift = false

    @Flag(name: .long, help: "Print LuaLS (lua-language-server) annotations.")
    var luals = false

    @Flag(name: .long, help: "With --luals and no PATH: the annotations of the moonflow module itself.")
    var api = false

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to FILE instead of standard output.", valueName: "FILE"))
    var output: String?

    @Argument(
        help: ArgumentHelp(
            "Plugin folders or .lua files. Several make one file with each feature's types once (an mf.compose and a child of it given alone, say).",
            valueName: "path"))
    var paths: [String] = []

    private var path: String? { paths.first }

    private var mode: String { lua ? "--lua" : swift ? "--swift" : "--luals" }

    func validate() throws {
        let modes = [lua, swift, luals].filter { $0 }.count
        if modes == 0 {
            throw ValidationError(
                """
                moonflow types needs what to print: --lua (the state declaration), --swift (Swift types) \
                or --luals (LuaLS annotations), e.g. moonflow types --swift \(path ?? "plugins/counter")
                """)
        }
        if modes > 1 {
            throw ValidationError("give one of --lua, --swift and --luals; run moonflow types once for each")
        }
        if api {
            guard luals else { throw ValidationError("--api goes with --luals: moonflow types --luals --api") }
            if !paths.isEmpty {
                throw ValidationError(
                    "--api prints the moonflow module's annotations, not a plugin's; drop \(paths.joined(separator: " ")), or drop --api"
                )
            }
            return
        }
        guard path != nil else {
            throw ValidationError(
                "moonflow types \(mode) needs a plugin: moonflow types \(mode) plugins/counter"
                    + (luals ? " (or --api for the moonflow module's own annotations)" : ""))
        }
        for path in paths { try validatePluginPath(path) }
        if let output {
            let folder = PathText.parent(of: output)
            var isFolder: ObjCBool = false
            if !folder.isEmpty
                && !(FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder) && isFolder.boolValue)
            {
                throw ValidationError(
                    "-o \(output): the folder \(folder) does not exist; make it first (mkdir -p \(folder))")
            }
        }
    }

    func run() throws {
        let text: String
        if api {
            text = LuaLSAnnotations.api
        } else {
            var features: [FeatureDeclarations] = []
            // A feature met twice (a compose's child, given alone too) is written once: the
            // file it came from says which it is.
            var seen: Set<String> = []
            for path in paths {
                do {
                    for feature in try FeatureDeclarations.load(path)
                    where seen.insert(Self.identity(of: feature)).inserted {
                        features.append(feature)
                    }
                } catch {
                    FileHandle.standardError.write(Data("\(error)\n".utf8))
                    throw ExitCode(1)
                }
            }
            let command = "moonflow types \(mode) \(paths.joined(separator: " "))"
            if lua {
                text = LuaStateDeclaration(features: features).source()
            } else if swift {
                text = SwiftTypesGenerator(features: features, command: command).source()
            } else {
                text = LuaLSAnnotations(features: features, command: command).source()
            }
        }
        if let output {
            do { try text.write(toFile: output, atomically: true, encoding: .utf8) } catch {
                FileHandle.standardError.write(
                    Data("moonflow types: cannot write \(output): \(error.localizedDescription)\n".utf8))
                throw ExitCode(1)
            }
        } else {
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    }

    /// A feature's file, as one path whatever the spelling (`plugins/notes/../composer`, a link).
    private static func identity(of feature: FeatureDeclarations) -> String {
        guard !feature.file.isEmpty else { return "name:" + feature.name }
        return URL(fileURLWithPath: feature.file).standardizedFileURL.resolvingSymlinksInPath().path + "#"
            + feature.name
    }
}
