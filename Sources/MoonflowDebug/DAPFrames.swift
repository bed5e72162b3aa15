import Foundation
import LuaKit

/// The Debug Adapter Protocol's framing: each message is a header block
/// (`Content-Length: N`, and perhaps `Content-Type`, each line ending in CRLF), an empty
/// line, then N bytes of UTF-8 JSON. An editor may send several messages in one
/// write, or one message over several: `DAPFrameReader` takes bytes as they come and
/// hands back every whole message they complete.
///
///     var reader = DAPFrameReader()
///     for message in try reader.take(bytesFromTheSocket) { … }   // each a JSON object
///     socket.write(try DAPFrameReader.frame(["type": "event", "event": "initialized"]))
///
/// A message that breaks the framing throws `DAPFrameError`, and the connection is closed
/// with the error's text logged: after it the stream cannot be trusted to be back in step.
/// That is any header line but DAP's two (an HTTP request line, `Host:`, `Origin:`: what a
/// web page's `fetch` to the port sends is refused at its first line, before its body is
/// read), no `Content-Length`, a length that is not a number or is over `maxLength`, a
/// header block longer than `maxHeader`, or a body that is not a JSON object. Each byte is
/// looked at once, however the bytes are split.
package struct DAPFrameReader {
    /// The largest body taken (a `setBreakpoints` on a long file is some kilobytes).
    package static let maxLength = 16 << 20
    /// The longest header block: DAP's is one or two short lines.
    package static let maxHeader = 1024
    private var buffer: [UInt8] = []
    /// Where the header line being read starts, and how far it has been searched for its CRLF.
    private var lineStart = 0
    private var scanned = 0
    /// The header block's Content-Length, once its line has come.
    private var length: Int?
    /// The bytes of the block's lines read so far.
    private var blockBytes = 0
    /// The body length of the message being read, once its header block is whole.
    private var expected: Int?

    package init() {}

    /// Appends `bytes` and returns every message they complete, in order.
    package mutating func take(_ bytes: some Collection<UInt8>) throws(DAPFrameError) -> [LuaValue] {
        buffer.append(contentsOf: bytes)
        var messages: [LuaValue] = []
        while true {
            if expected == nil {
                guard try readHeaderLines() else { break }
            }
            guard let count = expected, buffer.count - lineStart >= count else { break }
            let body = buffer[lineStart..<lineStart + count]
            lineStart += count
            scanned = lineStart
            expected = nil
            let message: LuaValue
            do { message = try LuaValue(json: String(decoding: body, as: UTF8.self)) } catch {
                throw DAPFrameError("a message is not JSON: \(error)")
            }
            guard case .table = message, message["type"]?.stringValue != nil else {
                throw DAPFrameError("a message is not a JSON object with a \"type\"")
            }
            messages.append(message)
        }
        if lineStart > 0 {
            buffer.removeFirst(lineStart)
            scanned -= lineStart
            lineStart = 0
        }
        return messages
    }

    /// Reads the header lines that have come; true once the empty line ending the block has
    /// (then `expected` is the body's length and `lineStart` where it starts).
    private mutating func readHeaderLines() throws(DAPFrameError) -> Bool {
        var i = max(scanned, lineStart + 1)
        while i < buffer.count {
            guard buffer[i - 1] == 13, buffer[i] == 10 else { i += 1; continue }
            let line = buffer[lineStart..<(i - 1)]
            blockBytes += line.count + 2
            lineStart = i + 1
            i = lineStart + 1
            if line.isEmpty {
                guard let length else { throw DAPFrameError("a header block has no Content-Length") }
                expected = length
                self.length = nil
                blockBytes = 0
                scanned = lineStart
                return true
            }
            try read(line)
            if blockBytes > Self.maxHeader {
                throw DAPFrameError(
                    "a header block runs past \(Self.maxHeader) bytes without its empty line (not a DAP client?)")
            }
        }
        scanned = max(i, lineStart + 1)
        if blockBytes + buffer.count - lineStart > Self.maxHeader {
            throw DAPFrameError(
                "a header block runs past \(Self.maxHeader) bytes without its empty line (not a DAP client?)")
        }
        return false
    }

    /// One header line: `Content-Length: N` or `Content-Type: …`, names in any case.
    private mutating func read(_ line: ArraySlice<UInt8>) throws(DAPFrameError) {
        let text = String(decoding: line, as: UTF8.self)
        let parts = text.split(separator: ":", maxSplits: 1)
        let name = parts.first.map { $0.lowercased() } ?? ""
        guard parts.count == 2, name == "content-length" || name == "content-type" else {
            throw DAPFrameError(
                "\"\(text.prefix(80))\" is not a DAP header (only Content-Length and Content-Type are): "
                    + (text.contains(" HTTP/") ? "an HTTP request, refused" : "not a DAP client"))
        }
        guard name == "content-length" else { return }
        let value = String(parts[1]).trimmingCharacters(in: .whitespaces)
        guard let count = Int(value), count >= 0 else {
            throw DAPFrameError("Content-Length is not a length: \"\(value.prefix(40))\"")
        }
        guard count <= Self.maxLength else {
            throw DAPFrameError("Content-Length \(count) is over the \(Self.maxLength)-byte limit")
        }
        guard length == nil || length == count else { throw DAPFrameError("a header block has two Content-Lengths") }
        length = count
    }

    /// The bytes to write for `message`: its header block and its JSON.
    package static func frame(_ message: LuaValue) throws -> [UInt8] {
        let body = try message.jsonBytes()
        return Array("Content-Length: \(body.count)\r\n\r\n".utf8) + body
    }
}

/// The framing broke: what was wrong, for the log.
package struct DAPFrameError: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
