import NIOCore

/// A source description, PT 202 (RFC 3550 §6.5).
public struct RTCPSourceDescription: Hashable, Sendable {
    /// One SDES item.
    public struct Item: Hashable, Sendable {
        /// CNAME item type.
        public static let cname: UInt8 = 1
        /// The item type (1 CNAME, 2 NAME, … 8 PRIV); never 0.
        public var type: UInt8
        /// The item text as bytes (UTF-8 for text items), at most 255.
        public var value: [UInt8]

        /// Creates an item.
        public init(type: UInt8, value: [UInt8]) {
            self.type = type
            self.value = value
        }

        /// A CNAME item.
        public static func cname(_ name: String) -> Item { Item(type: cname, value: Array(name.utf8)) }
    }

    /// The items of one source.
    public struct Chunk: Hashable, Sendable {
        /// The source described.
        public var ssrc: UInt32
        /// Its items.
        public var items: [Item]

        /// Creates a chunk.
        public init(ssrc: UInt32, items: [Item]) {
            self.ssrc = ssrc
            self.items = items
        }

        /// The CNAME, if present and valid UTF-8.
        public var cname: String? {
            items.first { $0.type == Item.cname }.flatMap { String(validating: $0.value, as: UTF8.self) }
        }
    }

    /// The chunks, at most 31.
    public var chunks: [Chunk]

    /// Creates a source description.
    public init(chunks: [Chunk]) {
        self.chunks = chunks
    }

    static let packetType: UInt8 = 202

    static func parse(count: UInt8, body: ByteBuffer) throws(WireError) -> RTCPSourceDescription {
        var body = body
        let start = body.readerIndex
        var chunks: [Chunk] = []
        for _ in 0..<count {
            let ssrc = try body.readWireInteger(as: UInt32.self, "RTCP SDES chunk SSRC")
            var items: [Item] = []
            while true {
                let type = try body.readWireInteger(as: UInt8.self, "RTCP SDES item type")
                if type == 0 { break }
                let length = Int(try body.readWireInteger(as: UInt8.self, "RTCP SDES item length"))
                items.append(Item(type: type, value: try body.readWireBytes(length: length, "RTCP SDES item")))
            }
            // Null octets up to the next 32-bit boundary.
            let consumed = body.readerIndex - start
            try body.skipWireBytes((4 - consumed % 4) % 4, "RTCP SDES chunk padding")
            chunks.append(Chunk(ssrc: ssrc, items: items))
        }
        return RTCPSourceDescription(chunks: chunks)
    }

    func write(into buffer: inout ByteBuffer) throws(WireError) {
        guard chunks.count <= 31 else { throw .invalidArgument("RTCP SDES has \(chunks.count) chunks, at most 31") }
        for chunk in chunks {
            for item in chunk.items where item.type == 0 || item.value.count > 255 {
                throw .invalidArgument("RTCP SDES item type \(item.type) with \(item.value.count) bytes")
            }
        }
        try RTCPPacket.writeHeader(into: &buffer, count: UInt8(chunks.count), packetType: Self.packetType) { buffer in
            let start = buffer.writerIndex
            for chunk in chunks {
                buffer.writeInteger(chunk.ssrc)
                for item in chunk.items {
                    buffer.writeInteger(item.type)
                    buffer.writeInteger(UInt8(item.value.count))
                    buffer.writeBytes(item.value)
                }
                // At least one null octet terminates the list, then pad to 32 bits.
                buffer.writeInteger(UInt8(0))
                let written = buffer.writerIndex - start
                buffer.writeZeros((4 - written % 4) % 4)
            }
        }
    }
}
