import ArgumentParser
import Foundation
import MoonflowTool

struct New: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "new",
        abstract: "Scaffold plugins/NAME with a feature (one action, one mutation, a timer) and a passing spec.",
        discussion: "Refuses to overwrite anything that exists."
    )

    @Argument(help: "The plugin's name: a letter, then letters, digits or underscores.")
    var name: String

    @Option(name: .long, help: ArgumentHelp("Where plugin folders live.", valueName: "DIR"))
    var plugins = "plugins"

    func run() throws {
        do {
            let made = try PluginScaffold(name: name, pluginsFolder: plugins).write()
            print("created \(made.joined(separator: "\n        "))")
            print(
                """

                next:
                  moonflow test \(plugins)/\(name)/spec          # the spec passes
                  moonflow run \(plugins)/\(name)                # try it at the prompt: tick, then tick ms=500
                """)
        } catch let e as PluginScaffold.Refusal {
            FileHandle.standardError.write(Data("moonflow new: \(e.message)\n".utf8))
            throw ExitCode(e.isUsage ? 2 : 1)
        }
    }
}
