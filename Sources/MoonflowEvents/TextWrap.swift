#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Long lines of `pretty` output folded to a width: a payload of many fields stays
/// readable in a terminal instead of running off its edge.
package enum TextWrap {
    /// The columns the output is folded to: the terminal's when `fd` is one, else 100.
    package static func width(of fd: Int32) -> Int {
        guard isatty(fd) == 1 else { return 100 }
        var size = winsize()
        guard ioctl(fd, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 100 }
        return Int(size.ws_col)
    }

    /// `line` folded at spaces to at most `width` visible columns (colour escapes take none),
    /// each following piece on a line of its own after `indent`; a word longer than the room
    /// left is cut where the room ends.
    package static func fold(_ line: String, width: Int, indent: String) -> String {
        let room = width - indent.count
        guard room >= 20, visibleCount(line) > width else { return line }
        var out = ""
        var current: [Character] = []
        var column = 0
        var lastSpace: Int?  // index in `current` of the last space outside an escape
        var limit = width
        var inEscape = false
        for c in line {
            current.append(c)
            if inEscape {
                if c == "m" { inEscape = false }
                continue
            }
            if c == "\u{1B}" { inEscape = true; continue }
            column += 1
            if c == " " { lastSpace = current.count - 1 }
            guard column > limit else { continue }
            let cut: Int
            var rest: [Character]
            if let space = lastSpace, space > 0 {
                cut = space
                rest = Array(current[(space + 1)...])
            } else {
                cut = current.count - 1
                rest = [c]
            }
            out += String(current[..<cut]) + "\n" + indent
            while rest.first == " " { rest.removeFirst() }
            current = rest
            column = visibleCount(String(rest))
            lastSpace = rest.lastIndex(of: " ")
            limit = room
        }
        return out + String(current)
    }

    /// Characters a terminal shows: those of `\u{1B}[...m` sequences left out.
    static func visibleCount(_ s: String) -> Int {
        var n = 0
        var inEscape = false
        for c in s {
            if inEscape {
                if c == "m" { inEscape = false }
            } else if c == "\u{1B}" {
                inEscape = true
            } else {
                n += 1
            }
        }
        return n
    }
}
