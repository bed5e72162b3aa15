import MoonflowHost
import MoonflowHostTools
import MoonflowEvents

/// `moonflow run` parsed without ArgumentParser, whose reflection of the commands' properties
/// was the largest part of a short run's start-up. It takes only what it fully understands:
/// `run`, one PATH, and `run`'s options in their plain `--name value` form (each once, a
/// value not starting with `-` unless it is `-`) and flags. Anything else, and anything that
/// does not validate, is left to ArgumentParser (nil), so help, errors and their exit
/// statuses come from one place and stay as they were.
extension RunRequest {
    /// The request, or nil to leave the arguments to ArgumentParser. Builds no ArgumentParser
    /// type: their property wrappers' generic types cost a conformance search each to make.
    static func quickParse(_ arguments: [String]) -> RunRequest? {
        guard arguments.first == "run" else { return nil }
        var run = RunRequest(path: "")
        var path: String?
        var seen: Set<String> = []
        var i = 1
        while i < arguments.count {
            let word = arguments[i]
            guard word.hasPrefix("-") else {
                guard path == nil else { return nil }
                path = word
                i += 1
                continue
            }
            guard word.hasPrefix("--"), seen.insert(word).inserted else { return nil }
            switch word {
            case "--watch": run.watch = true; i += 1; continue
            case "--sandbox": run.sandbox = true; i += 1; continue
            default: break
            }
            guard i + 1 < arguments.count else { return nil }
            let value = arguments[i + 1]
            guard !value.hasPrefix("-") || value == "-" else { return nil }
            switch word {
            case "--actions": run.actions = value
            case "--format": guard let v = OutputFormat(rawValue: value) else { return nil }; run.format = v
            case "--clock": guard let v = FeatureHost.Clock(rawValue: value) else { return nil }; run.clock = v
            case "--until": guard let v = Int(value) else { return nil }; run.until = v
            case "--state": guard let v = StateOutput(rawValue: value) else { return nil }; run.state = v
            case "--db": run.db = value
            case "--color": guard let v = ColorMode(rawValue: value) else { return nil }; run.color = v
            case "--inspect": run.inspect = value
            case "--inspect-frames": guard let v = Int(value) else { return nil }; run.inspectFrames = v
            case "--inspect-memory": guard let v = Int(value) else { return nil }; run.inspectMemory = v
            case "--record": run.record = value
            case "--seed": guard let v = Int64(value) else { return nil }; run.seed = v
            case "--time-limit": guard let v = Int64(value) else { return nil }; run.timeLimit = v
            case "--memory-limit": guard let v = Int(value) else { return nil }; run.memoryLimit = v
            default: return nil
            }
            i += 2
        }
        guard let path else { return nil }
        run.path = path
        do {
            try LimitOptions.check(timeLimit: run.timeLimit, memoryLimit: run.memoryLimit)
            try run.validate()
        } catch { return nil }
        return run
    }
}
