// `moonflow-lua ARGS` is `moonflow exec ARGS`: it replaces itself with the `moonflow`
// installed beside it. It is the one word `moonflow exec` puts at the lowest index of
// `arg`, where lua5.4 puts its own path, so that a script that starts its interpreter
// again (`os.execute(arg[-1] .. " -e 'print(1)'")`, Penlight's `app.lua()`, which
// quotes each word) starts `moonflow exec`. Only the C library: it starts at once.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// This program's own file, links resolved; nil when the system does not say.
func ownPath() -> String? {
    #if os(Linux)
    guard let resolved = realpath("/proc/self/exe", nil) else { return nil }
    #else
    var size: UInt32 = 0
    _ = _NSGetExecutablePath(nil, &size)
    var buffer = [CChar](repeating: 0, count: Int(size) + 1)
    guard _NSGetExecutablePath(&buffer, &size) == 0, let resolved = realpath(buffer, nil) else { return nil }
    #endif
    defer { free(resolved) }
    return String(cString: resolved)
}

let own = ownPath() ?? CommandLine.arguments[0]
let folder = own.lastIndex(of: "/").map { String(own[..<$0]) } ?? "."
let moonflow = folder + "/moonflow"
let words = [moonflow, "exec"] + CommandLine.arguments.dropFirst()
// Messages start with the word this program was started by, as lua5.4's start with its argv[0].
setenv("MOONFLOW_LUA_ARGV0", CommandLine.arguments.first ?? "moonflow-lua", 1)
var argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
execv(moonflow, &argv)
let reason = String(cString: strerror(errno))
let message = Array("moonflow-lua: cannot start \(moonflow) (\(reason)); install moonflow-lua beside moonflow\n".utf8)
_ = write(2, message, message.count)
exit(1)
