/// Reads big-endian bit fields and Exp-Golomb codes (H.264 §9.1) from an RBSP.
/// Every read past the end throws; nothing traps.
struct BitReader {
    private let bytes: [UInt8]
    private(set) var bitOffset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var bitsLeft: Int { bytes.count * 8 - bitOffset }

    mutating func bit() throws -> UInt32 {
        guard bitOffset < bytes.count * 8 else { throw BitstreamError("read past the end of \(bytes.count) bytes") }
        let value = (bytes[bitOffset >> 3] >> (7 - UInt8(bitOffset & 7))) & 1
        bitOffset += 1
        return UInt32(value)
    }

    mutating func flag() throws -> Bool { try bit() == 1 }

    /// `count` bits (at most 32) as an unsigned number.
    mutating func bits(_ count: Int) throws -> UInt32 {
        precondition(count >= 0 && count <= 32)
        var value: UInt32 = 0
        for _ in 0..<count { value = value << 1 | (try bit()) }
        return value
    }

    /// ue(v): unsigned Exp-Golomb. Codes longer than 32 bits (values over 2^32 - 2) throw.
    mutating func ue() throws -> UInt32 {
        var leadingZeros = 0
        while try bit() == 0 {
            leadingZeros += 1
            guard leadingZeros <= 31 else { throw BitstreamError("Exp-Golomb code longer than 32 bits at bit \(bitOffset)") }
        }
        let suffix = try bits(leadingZeros)
        return UInt32((UInt64(1) << UInt64(leadingZeros)) - 1 + UInt64(suffix))
    }

    /// se(v): signed Exp-Golomb.
    mutating func se() throws -> Int32 {
        let code = Int64(try ue())
        return Int32(code & 1 == 1 ? (code + 1) / 2 : -(code / 2))
    }

    /// ue(v) that must not exceed `limit`.
    mutating func ue(max limit: UInt32, _ name: String) throws -> Int {
        let value = try ue()
        guard value <= limit else { throw BitstreamError("\(name) is \(value), above the limit \(limit)") }
        return Int(value)
    }
}
