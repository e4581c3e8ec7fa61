/// The 96-bit STUN transaction id.
public struct STUNTransactionID: Hashable, Sendable, CustomStringConvertible {
    /// The first 32 bits.
    public var high: UInt32
    /// The last 64 bits.
    public var low: UInt64

    /// Creates a transaction id from its two parts.
    public init(high: UInt32, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Creates a transaction id from exactly 12 bytes.
    public init(bytes: some Collection<UInt8>) throws(WireError) {
        let array = Array(bytes)
        guard array.count == 12 else {
            throw .invalidArgument("STUN transaction id needs 12 bytes, got \(array.count)")
        }
        self.high = array[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        self.low = array[4..<12].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    /// A random transaction id.
    public static func random() -> STUNTransactionID {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    /// A random transaction id drawn from `generator`.
    public static func random(using generator: inout some RandomNumberGenerator) -> STUNTransactionID {
        STUNTransactionID(high: generator.next(), low: generator.next())
    }

    /// The 12 bytes in network order.
    public var bytes: [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: high >> (24 - 8 * $0)) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
    }

    public var description: String {
        bytes.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
