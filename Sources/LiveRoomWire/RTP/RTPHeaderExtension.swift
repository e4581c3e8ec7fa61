import NIOCore

/// An RTP header extension (RFC 3550 §5.3.1), decoded into elements for the
/// one-byte (0xBEDE) and two-byte (0x100X) forms of RFC 8285.
public enum RTPHeaderExtension: Hashable, Sendable {
    /// One element of an RFC 8285 header extension.
    public struct Element: Hashable, Sendable {
        /// The extension id negotiated with `a=extmap` (1–14 one-byte, 1–255 two-byte).
        public var id: UInt8
        /// The element data.
        public var data: [UInt8]

        /// Creates an element.
        public init(id: UInt8, data: [UInt8]) {
            self.id = id
            self.data = data
        }
    }

    /// RFC 8285 one-byte header form (profile 0xBEDE): ids 1–14, 1–16 data bytes.
    case oneByte([Element])
    /// RFC 8285 two-byte header form (profile 0x1000 | appBits): ids 1–255, 0–255 data bytes.
    case twoByte(appBits: UInt8, [Element])
    /// Any other profile, with its data (a multiple of 4 bytes).
    case other(profile: UInt16, data: [UInt8])

    /// The one-byte form profile.
    public static let oneByteProfile: UInt16 = 0xBEDE

    /// The decoded elements (empty for ``other(profile:data:)``).
    public var elements: [Element] {
        switch self {
        case .oneByte(let elements), .twoByte(_, let elements): return elements
        case .other: return []
        }
    }

    /// The data of the first element with `id`, if any.
    public subscript(id id: UInt8) -> [UInt8]? {
        elements.first { $0.id == id }?.data
    }

    /// The 16-bit "defined by profile" field.
    public var profile: UInt16 {
        switch self {
        case .oneByte: return Self.oneByteProfile
        case .twoByte(let appBits, _): return 0x1000 | UInt16(appBits & 0x0F)
        case .other(let profile, _): return profile
        }
    }

    /// Decodes extension `data` (already stripped of the 4-byte profile/length header).
    static func decode(profile: UInt16, data: ByteBuffer) throws(WireError) -> RTPHeaderExtension {
        var data = data
        if profile == oneByteProfile {
            var elements: [Element] = []
            while let byte = data.readInteger(as: UInt8.self) {
                if byte == 0 { continue }  // padding
                let id = byte >> 4
                if id == 15 { break }  // reserved: stop processing (RFC 8285 §4.2)
                let length = Int(byte & 0x0F) + 1
                let value = try data.readWireBytes(length: length, "RTP one-byte extension id \(id)")
                elements.append(Element(id: id, data: value))
            }
            return .oneByte(elements)
        }
        if profile & 0xFFF0 == 0x1000 {
            var elements: [Element] = []
            while let id = data.readInteger(as: UInt8.self) {
                if id == 0 { continue }  // padding
                let length = Int(try data.readWireInteger(as: UInt8.self, "RTP two-byte extension length"))
                let value = try data.readWireBytes(length: length, "RTP two-byte extension id \(id)")
                elements.append(Element(id: id, data: value))
            }
            return .twoByte(appBits: UInt8(profile & 0x0F), elements)
        }
        return .other(profile: profile, data: Array(data.readableBytesView))
    }

    /// Writes profile, length and padded data.
    func encode(into buffer: inout ByteBuffer) throws(WireError) {
        buffer.writeInteger(profile)
        let lengthIndex = buffer.writerIndex
        buffer.writeInteger(UInt16(0))
        let start = buffer.writerIndex
        switch self {
        case .oneByte(let elements):
            for element in elements {
                guard (1...14).contains(element.id), (1...16).contains(element.data.count) else {
                    throw .invalidArgument("RTP one-byte extension id \(element.id) with \(element.data.count) bytes")
                }
                buffer.writeInteger(element.id << 4 | UInt8(element.data.count - 1))
                buffer.writeBytes(element.data)
            }
        case .twoByte(_, let elements):
            for element in elements {
                guard element.id != 0, element.data.count <= 255 else {
                    throw .invalidArgument("RTP two-byte extension id \(element.id) with \(element.data.count) bytes")
                }
                buffer.writeInteger(element.id)
                buffer.writeInteger(UInt8(element.data.count))
                buffer.writeBytes(element.data)
            }
        case .other(_, let data):
            buffer.writeBytes(data)
        }
        let length = buffer.writerIndex - start
        buffer.writeZeros((4 - length % 4) % 4)
        let words = (buffer.writerIndex - start) / 4
        guard words <= Int(UInt16.max) else { throw .invalidArgument("RTP header extension longer than 65535 words") }
        buffer.setInteger(UInt16(words), at: lengthIndex)
    }
}

extension RTPHeaderExtension {
    /// Renumbers the header extension elements `from` to `to` in a serialized RTP packet, in
    /// place (one-byte and two-byte forms; `to` must fit the form). Returns whether any was.
    @discardableResult
    public static func renumber(_ from: UInt8, to: UInt8, inPacket packet: inout [UInt8]) -> Bool {
        packet.withUnsafeMutableBytes { renumber(from, to: to, inPacket: $0) }
    }

    /// ``renumber(_:to:inPacket:)-([UInt8])`` on a packet that is `packet`'s readable bytes.
    @discardableResult
    public static func renumber(_ from: UInt8, to: UInt8, inPacket packet: inout ByteBuffer) -> Bool {
        packet.withUnsafeMutableReadableBytes { renumber(from, to: to, inPacket: $0) }
    }

    /// ``renumber(_:to:inPacket:)-([UInt8])`` on the packet in `packet`'s memory.
    @discardableResult
    public static func renumber(_ from: UInt8, to: UInt8, inPacket packet: UnsafeMutableRawBufferPointer) -> Bool {
        guard to != 0, packet.count >= 12, packet[0] & 0x10 != 0 else { return false }
        let start = 12 + 4 * Int(packet[0] & 0x0F)
        guard packet.count >= start + 4 else { return false }
        let profile = UInt16(packet[start]) << 8 | UInt16(packet[start + 1])
        let end = start + 4 + 4 * (Int(packet[start + 2]) << 8 | Int(packet[start + 3]))
        guard end <= packet.count else { return false }
        var index = start + 4
        var changed = false
        if profile == oneByteProfile {
            guard (1...14).contains(to) else { return false }
            while index < end {
                let byte = packet[index]
                if byte == 0 {
                    index += 1
                    continue
                }
                let id = byte >> 4
                if id == 15 { break }
                if id == from {
                    packet[index] = to << 4 | (byte & 0x0F)
                    changed = true
                }
                index += 1 + Int(byte & 0x0F) + 1
            }
        } else if profile & 0xFFF0 == 0x1000 {
            while index + 1 < end {
                let id = packet[index]
                if id == 0 {
                    index += 1
                    continue
                }
                if id == from {
                    packet[index] = to
                    changed = true
                }
                index += 2 + Int(packet[index + 1])
            }
        }
        return changed
    }
}
