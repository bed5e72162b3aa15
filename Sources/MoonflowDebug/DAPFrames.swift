import Foundation
import LuaKit

/// The Debug Adapter Protocol's framing: each message is a header block
/// (`Content-Length: N`, other headers ignored, each line ending in CRLF), an empty
/// line, then N bytes of UTF-8 JSON. An editor may send several messages in one
/// write, or one message over several: `DAPFrameReader` takes bytes as they come and
/// hands back every whole message they complete.
///
///     var reader = DAPFrameReader()
///     for message in try reader.take(bytesFromTheSocket) { … }   // each a JSON object
///     socket.write(try DAPFrameReader.frame(["type": "event", "event": "initialized"]))
///
/// A message that breaks the framing (no `Content-Length`, a length that is not a
/// number or is over `maxLength`, a body that is not a JSON object) throws
/// `DAPFrameError`: after it the stream cannot be trusted to be back in step, so the
/// connection is closed with the error's text logged.
package struct DAPFrameReader {
    /// The largest body taken (a `setBreakpoints` on a long file is some kilobytes).
    package static let maxLength = 16 << 20
    private var buffer: [UInt8] = []
    /// The body length of the message being read, once its header block is whole.
    private var expected: Int?

    package init() {}

    /// Appends `bytes` and returns every message they complete, in order.
    package mutating func take(_ bytes: some Collection<UInt8>) throws(DAPFrameError) -> [LuaValue] {
        buffer.append(contentsOf: bytes)
        var messages: [LuaValue] = []
        var start = 0
        while true {
            if expected == nil {
                guard let end = Self.headerEnd(buffer, from: start) else { break }
                expected = try Self.contentLength(buffer[start..<end])
                start = end + 4
            }
            guard let length = expected, buffer.count - start >= length else { break }
            let body = buffer[start..<start + length]
            start += length
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
        buffer.removeFirst(start)
        if expected == nil, buffer.count > 64 << 10 {
            throw DAPFrameError("a header block runs past 64 KiB without its empty line")
        }
        return messages
    }

    /// The bytes to write for `message`: its header block and its JSON.
    package static func frame(_ message: LuaValue) throws -> [UInt8] {
        let body = try message.jsonBytes()
        return Array("Content-Length: \(body.count)\r\n\r\n".utf8) + body
    }

    /// Where the CRLF CRLF that ends a header block starts, if it has come.
    private static func headerEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count - start >= 4 else { return nil }
        for i in start...(bytes.count - 4)
        where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }

    private static func contentLength(_ header: ArraySlice<UInt8>) throws(DAPFrameError) -> Int {
        let text = String(decoding: header, as: UTF8.self)
        for line in text.split(separator: "\r\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "content-length" else { continue }
            let value = String(parts[1]).trimmingCharacters(in: .whitespaces)
            guard let length = Int(value), length >= 0 else {
                throw DAPFrameError("Content-Length is not a length: \"\(value)\"")
            }
            guard length <= maxLength else {
                throw DAPFrameError("Content-Length \(length) is over the \(maxLength)-byte limit")
            }
            return length
        }
        throw DAPFrameError("a header block has no Content-Length: \"\(text.prefix(80))\"")
    }
}

/// The framing broke: what was wrong, for the log.
package struct DAPFrameError: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
