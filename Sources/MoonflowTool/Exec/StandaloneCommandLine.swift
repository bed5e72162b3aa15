/// A `lua5.4` command line read by lua5.4's own rules: what `moonflow exec` runs.
///
///     let line = StandaloneCommandLine(["moonflow-lua", "-e", "x = 1", "-l", "json", "main.lua", "a"])
///     // line.steps == [.execute("x = 1"), .require("json", into: "json")], line.script == 5
///
/// Options come before the script: `-e STAT` and `-l MOD` (also `-eSTAT`, `-lMOD`,
/// `-l G=MOD`) and `-W` act in the order given; `-i`, `-v`, `-E` anywhere among them.
/// The first word that does not start with `-` is the script; `-` is standard input
/// and stops the options, as `--` does (then a script named `-` is a file). Anything
/// else that starts with `-` is a bad option, as is `-e` or `-l` with no argument
/// (or one starting with `-`): lua5.4 then prints its usage and exits 1.
package struct StandaloneCommandLine: Sendable, Equatable {
    /// What `-e`, `-l` and `-W` ask, in their order on the command line.
    package enum Step: Sendable, Equatable {
        /// `-e STAT`: run STAT (named `(command line)` in messages).
        case execute(String)
        /// `-l MOD` or `-l G=MOD`: `G = require(MOD)` (G is MOD when not given).
        case require(String, into: String)
        /// `-W`: warnings on.
        case warningsOn
    }

    /// The whole command line, the interpreter first: `arg` holds it, the script at 0.
    package let words: [String]
    package private(set) var steps: [Step] = []
    /// `-i`: read-eval-print after the script (it prints the version first, as `-v`).
    package private(set) var interactive = false
    /// `-v` (or `-i`): print the version line first.
    package private(set) var printsVersion = false
    /// `-E`: ignore LUA_INIT, LUA_PATH and LUA_CPATH.
    package private(set) var ignoresEnvironment = false
    /// Whether any `-e` was given.
    package private(set) var executes = false
    /// The index of the script in `words`; nil when there is none.
    package private(set) var script: Int?
    /// The option lua5.4 refuses (its usage follows), when there is one.
    package private(set) var badOption: String?

    /// Reads `words` (the interpreter first) from index `first` on: the words
    /// between are the interpreter's own (`moonflow exec`'s `--time-limit 100`),
    /// kept at negative indices of `arg` as lua5.4 keeps its options.
    package init(_ words: [String], optionsFrom first: Int = 1) {
        self.words = words
        var i = first
        while i < words.count {
            let word = Array(words[i].utf8)
            guard word.first == UInt8(ascii: "-") else { script = i; return }
            let option = word.count > 1 ? word[1] : 0
            let alone = word.count == 2
            switch option {
            case UInt8(ascii: "-"):  // `--`
                guard alone else { badOption = words[i]; return }
                if i + 1 < words.count { script = i + 1 }
                return
            case 0:  // `-`: standard input
                script = i
                return
            case UInt8(ascii: "E"), UInt8(ascii: "W"), UInt8(ascii: "i"), UInt8(ascii: "v"):
                guard alone else { badOption = words[i]; return }
                switch option {
                case UInt8(ascii: "E"): ignoresEnvironment = true
                case UInt8(ascii: "W"): steps.append(.warningsOn)
                case UInt8(ascii: "i"): interactive = true; printsVersion = true
                default: printsVersion = true
                }
            case UInt8(ascii: "e"), UInt8(ascii: "l"):
                var value = String(decoding: word.dropFirst(2), as: UTF8.self)
                if alone {
                    guard i + 1 < words.count, !words[i + 1].hasPrefix("-") else { badOption = words[i]; return }
                    i += 1
                    value = words[i]
                }
                if option == UInt8(ascii: "e") {
                    executes = true
                    steps.append(.execute(value))
                } else if let equals = value.firstIndex(of: "=") {
                    steps.append(.require(String(value[value.index(after: equals)...]), into: String(value[..<equals])))
                } else {
                    steps.append(.require(value, into: value))
                }
            default:
                badOption = words[i]
                return
            }
            i += 1
        }
    }

    /// The script reads standard input: `-` not after `--`.
    package var scriptIsStandardInput: Bool {
        guard let script else { return false }
        return words[script] == "-" && words[script - 1] != "--"
    }

    /// The global `arg`: the script at 0, its arguments after it, everything
    /// before it at negative indices (with no script, the interpreter is at 0).
    package var argTable: [Int64: String] {
        let zero = script ?? 0
        var table: [Int64: String] = [:]
        for (i, word) in words.enumerated() { table[Int64(i - zero)] = word }
        return table
    }

    /// The script's arguments (`...`), before any step changes `arg`.
    package var scriptArguments: [String] {
        guard let script else { return [] }
        return Array(words[(script + 1)...])
    }

    /// What lua5.4 prints on standard error for `badOption`, with `name` and
    /// `command` in lua5.4's place (`moonflow`, `moonflow exec`).
    package static func usage(badOption: String, name: String, command: String) -> String {
        let bytes = Array(badOption.utf8)
        let what =
            bytes.count > 1 && (bytes[1] == UInt8(ascii: "e") || bytes[1] == UInt8(ascii: "l"))
            ? "'\(badOption)' needs argument" : "unrecognized option '\(badOption)'"
        return """
            \(name): \(what)
            usage: \(command) [options] [script [args]]
            Available options are:
              -e stat   execute string 'stat'
              -i        enter interactive mode after executing 'script'
              -l mod    require library 'mod' into global 'mod'
              -l g=mod  require library 'mod' into global 'g'
              -v        show version information
              -E        ignore environment variables
              -W        turn warnings on
              --        stop handling options
              -         stop handling options and execute stdin

            """
    }
}
