import Foundation
import LuaKit
import MoonflowEvents
import MoonflowHost
import MoonflowLua

/// The input's lines: actions (timed or not), prompt commands, and the errors of bad lines.
extension FeatureRun {
    /// Parses a line (see `InputLine`): returns a timed or untimed action, or nil after
    /// reporting a bad line or carrying out a prompt command.
    func parse(_ line: String, _ n: Int) -> (Int?, LuaValue)? {
        do {
            switch try InputLine.parse(line, shorthand: input.allowsShorthand, actions: actionSchema) {
            case nil:
                return nil
            case .command(let command):
                perform(command)
                return nil
            case .action(let action, let at):
                if let at {
                    // The virtual clock is exact; on the real one, a line is late when it goes back
                    // before an earlier timed line (not by the milliseconds reading takes).
                    let clock = host.testScheduler?.now ?? latestTimedLine
                    if at < clock {
                        // Sent at once, as late as it is: say so rather than reorder the input.
                        emit(
                            .log(
                                message:
                                    "\"at\":\(at) is before the run's clock (\(clock) ms), so the action is sent now; timed lines go in time order",
                                location: "\(input.name):\(n)"))
                    }
                    latestTimedLine = max(latestTimedLine, at)
                }
                return (at, action)
            }
        } catch {
            inputError(error.message, line: n)
            return nil
        }
    }

    /// The declared actions (nil under an `mf.compose` that declares none: its `route` decides).
    var actionSchema: Schema? { feature.declaredActions }

    func send(_ action: LuaValue, line: Int) {
        do {
            try dispatch(action)
        } catch {
            inputError(Self.suggesting(String(describing: error), for: action, in: actionSchema), line: line)
        }
    }

    /// `message` about an undeclared action, with the declared one its type is nearest to:
    /// "undeclared action 'markread'; did you mean 'markRead'? declared actions: …" (a typo at
    /// the prompt, or in an input line). Any other message is returned as it is.
    static func suggesting(_ message: String, for action: LuaValue, in schema: Schema?) -> String {
        guard let schema, let type = action["type"]?.stringValue, schema.shapes[type] == nil,
            let near = Nearest.name(to: type, in: schema.names)
        else { return message }
        let undeclared = "undeclared action '\(type)'; "
        guard let range = message.range(of: undeclared) else { return message }
        return message.replacingCharacters(in: range, with: undeclared + "did you mean '\(near)'? ")
    }
}
