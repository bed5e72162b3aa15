import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowHostTools
import MoonflowLua

/// The prompt: its commands, `help`, the banner, what Tab completes.
extension FeatureRun {
    /// Carries out a prompt command.
    func perform(_ command: PromptCommand) {
        switch command {
        case .help:
            write?(helpText)
        case .advance(let ms):
            guard let test = host.testScheduler else {
                write?(
                    ":advance moves the virtual clock, and this run is on the real clock, where time passes by itself; start the run with --clock virtual to move time by hand"
                )
                return
            }
            let target = test.now.saturatingAdd(ms)
            let fired = test.firedTimerCount
            host.advance(to: options.untilMs.map { min($0, target) } ?? target)
            let count = test.firedTimerCount - fired
            write?("clock at \(test.now) ms; \(count) timer\(count == 1 ? "" : "s") fired")
        case .quit:
            input.end()
        case .reload:
            reload(changed: nil, noticed: Date())
        case .restart:
            restart()
        case .state:
            write?(FeatureRun.pretty(feature.state))
        case .run:
            if let test = host.testScheduler {
                // To the next point where the feature is idle or nothing is scheduled (an
                // `mf.interval` never idles: stop after a minute of virtual time).
                let limit = test.now.saturatingAdd(60_000)
                host.settle()
                while !isIdle, let next = test.nextDueTime, next <= limit {
                    if let until = options.untilMs, next > until { host.advance(to: until); break }
                    host.advance(to: next)
                }
                if !isIdle { write?("still busy at \(test.now) ms: \(inFlightSummary)") }
            } else {
                waitIdle(until: options.untilMs, maxSeconds: 10)
            }
        }
    }

    /// `help`: the commands and the declared actions with their fields.
    var helpText: String {
        var lines = [
            "commands:",
            "  ACTION key=value ...   send an action (a bare value fills its only field; quote text with spaces)",
            "  {\"type\":...}           send an action as JSON",
            "  help                   this list",
        ]
        if options.clock == .virtual {
            lines += [
                "  :advance MS            move the virtual clock on by MS",
                "  :run                   run the virtual clock until the feature is idle",
            ]
        }
        lines += [
            "  :reload                load the plugin's code again, keeping the state",
            "  :restart               load it again and start over from its initial state",
            "  :state                 print the whole state",
            "  :quit or Ctrl-D        end the input (Tab completes, Up recalls earlier lines)",
        ]
        if let actions = actionSchema {
            lines.append("actions:")
            for name in actions.names {
                let fields = (actions.shapes[name] ?? [:]).sorted { $0.key < $1.key }
                    .map { "\(LuaValue.escaped($0.key))=\($0.value.spelled)" }
                // The plugin's names, control characters escaped (`\027`) before the terminal.
                lines.append("  " + ([LuaValue.escaped(name)] + fields).joined(separator: " "))
            }
        } else {
            lines.append("actions: whatever \(LuaValue.escaped(feature.name))'s route sends to a child")
        }
        return lines.joined(separator: "\n")
    }

    /// The prompt's first line: what runs, on which clock, how to get help.
    var banner: String {
        let clock =
            options.clock == .virtual
            ? "the virtual clock (it moves only with :advance MS and :run)"
            : "the real clock"
        return
            "moonflow: \(LuaValue.escaped(feature.name)) on \(clock); type help for the actions and commands, :quit or Ctrl-D to end"
    }

    /// Tells the prompt what Tab completes.
    func prepareReader() {
        guard let reader = input.reader else { return }
        var actions: [String: [String]] = [:]
        if let schema = actionSchema {
            for (name, fields) in schema.shapes { actions[name] = fields.keys.sorted() }
        }
        let commands =
            (options.clock == .virtual ? ["help", ":advance", ":run"] : ["help"]) + [":reload", ":state", ":quit"]
        reader.setCompletions(actions: actions, commands: commands)
    }

    /// What is still running, for messages: `save #2, load #3` or `nothing`.
    var inFlightSummary: String {
        let feature = self.feature!
        let flights = (try? host.performUnlessStuck { feature.inFlight.map(\.summary) }) ?? []
        return flights.isEmpty ? "nothing" : flights.joined(separator: ", ")
    }

    /// A value as indented JSON, integers exact.
    static func pretty(_ value: LuaValue, indent: String = "") -> String {
        guard case .table(let t) = value, !t.isEmpty else {
            return (try? value.json(sortedKeys: true)) ?? value.description
        }
        let inner = indent + "  "
        if t.hash.isEmpty {
            return "[\n" + t.array.map { inner + pretty($0, indent: inner) }.joined(separator: ",\n") + "\n\(indent)]"
        }
        var entries = t.hash.map { ($0.key, $0.value) }
        for (i, v) in t.array.enumerated() { entries.append((.integer(Int64(i + 1)), v)) }
        let rendered = entries.map { key, v -> (String, String) in
            let k = key.stringValue ?? key.description
            return (
                k, "\(inner)\((try? LuaValue.string(LuaString(k)).json()) ?? "\"\(k)\""): \(pretty(v, indent: inner))"
            )
        }.sorted { $0.0 < $1.0 }.map(\.1)
        return "{\n" + rendered.joined(separator: ",\n") + "\n\(indent)}"
    }
}
