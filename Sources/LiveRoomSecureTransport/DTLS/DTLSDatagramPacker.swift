/// Packs the DTLS records OpenSSL wrote into a memory BIO into datagrams of at most
/// ``mtu`` bytes.
///
/// A memory BIO loses the datagram boundaries a socket BIO would keep. OpenSSL already
/// fragments handshake messages so that each record fits the MTU set with `SSL_set_mtu`;
/// this puts whole records back into datagrams, several per datagram while they fit
/// (RFC 6347 §4.1.1 allows that), never splitting a record.
struct DTLSDatagramPacker {
    /// The largest datagram to produce, in bytes.
    var mtu: Int

    /// Splits `records` (concatenated DTLS records) into datagrams.
    ///
    /// A record longer than the MTU goes out alone; bytes that do not parse as a record
    /// (which OpenSSL never writes) go out as one final datagram.
    func datagrams(from records: [UInt8]) -> [[UInt8]] {
        var result: [[UInt8]] = []
        var current: [UInt8] = []
        var offset = 0
        while offset < records.count {
            var recordLength = records.count - offset
            if let header = DTLSRecordHeader(records, at: offset),
                DTLSRecordHeader.length + Int(header.fragmentLength) <= recordLength
            {
                recordLength = DTLSRecordHeader.length + Int(header.fragmentLength)
            }
            if !current.isEmpty && current.count + recordLength > mtu {
                result.append(current)
                current = []
            }
            current.append(contentsOf: records[offset..<offset + recordLength])
            offset += recordLength
        }
        if !current.isEmpty { result.append(current) }
        return result
    }
}
