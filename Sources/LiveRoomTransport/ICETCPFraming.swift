import NIOCore

/// RFC 4571 framing for ICE-TCP (RFC 6544): on a TCP connection every STUN message, DTLS
/// record and SRTP packet is preceded by its length as a 16-bit big-endian number.
public enum ICETCPFraming {
    /// The largest frame either side accepts: a media packet fits in 1500 bytes, a DTLS
    /// flight's record in a few more; anything longer is not WebRTC and closes the connection.
    public static let maxFrameLength = 4096

    /// `packet` with its length in front, ready to write on the connection.
    public static func frame(_ packet: ByteBuffer) -> ByteBuffer {
        var framed = ByteBuffer()
        framed.reserveCapacity(packet.readableBytes + 2)
        framed.writeInteger(UInt16(truncatingIfNeeded: packet.readableBytes))
        framed.writeImmutableBuffer(packet)
        return framed
    }

    /// A frame longer than ``maxFrameLength`` (or empty) arrived.
    public struct FrameError: Error, Sendable, Hashable, CustomStringConvertible {
        public var length: Int
        public var description: String { "an ICE-TCP frame of \(length) bytes (at most \(ICETCPFraming.maxFrameLength), never empty)" }
    }

    /// Splits a TCP byte stream into the packets it carries.
    public struct Decoder: ByteToMessageDecoder {
        public typealias InboundOut = ByteBuffer

        public init() {}

        public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
            guard let frame = try Self.nextFrame(from: &buffer) else { return .needMoreData }
            context.fireChannelRead(NIOAny(frame))
            return .continue
        }

        public mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
            try decode(context: context, buffer: &buffer)
        }

        /// The next whole frame's packet, consumed from `buffer`; nil until it has all arrived.
        public static func nextFrame(from buffer: inout ByteBuffer) throws(FrameError) -> ByteBuffer? {
            guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self) else { return nil }
            guard length > 0, Int(length) <= maxFrameLength else { throw FrameError(length: Int(length)) }
            guard buffer.readableBytes >= 2 + Int(length) else { return nil }
            buffer.moveReaderIndex(forwardBy: 2)
            return buffer.readSlice(length: Int(length))
        }
    }
}
