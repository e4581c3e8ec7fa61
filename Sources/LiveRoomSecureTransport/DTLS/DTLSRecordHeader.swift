/// The 13-byte header of a DTLS 1.0/1.2 record (RFC 6347 §4.1).
struct DTLSRecordHeader: Hashable {
    static let length = 13

    var contentType: UInt8
    var version: UInt16
    var epoch: UInt16
    /// 48-bit record sequence number.
    var sequenceNumber: UInt64
    /// Length of the fragment that follows the header.
    var fragmentLength: UInt16

    /// Parses the header at `offset`; `nil` if fewer than 13 bytes remain.
    init?(_ bytes: some RandomAccessCollection<UInt8>, at offset: Int = 0) {
        guard offset >= 0, bytes.count - offset >= Self.length else { return nil }
        let start = bytes.index(bytes.startIndex, offsetBy: offset)
        func byte(_ i: Int) -> UInt8 { bytes[bytes.index(start, offsetBy: i)] }
        contentType = byte(0)
        version = UInt16(byte(1)) << 8 | UInt16(byte(2))
        epoch = UInt16(byte(3)) << 8 | UInt16(byte(4))
        sequenceNumber = (5...10).reduce(UInt64(0)) { $0 << 8 | UInt64(byte($1)) }
        fragmentLength = UInt16(byte(11)) << 8 | UInt16(byte(12))
    }

    /// Whether a datagram can be DTLS at all: long enough for a record header, and a first
    /// byte in 20...63, the range RFC 7983 §7 reserves for DTLS when demultiplexing
    /// STUN, DTLS and SRTP on one port.
    static func mayBeDTLS(_ datagram: UnsafeRawBufferPointer) -> Bool {
        datagram.count >= length && (20...63).contains(datagram[0])
    }
}
