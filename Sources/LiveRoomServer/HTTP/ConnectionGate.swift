import LiveRoomProtocol
import NIOCore
import Synchronization

/// Counts signaling connections, in total and per address, and admits a new one only under
/// both limits. Addresses are IPv4 addresses or IPv6 /64 prefixes (one host usually holds a
/// whole /64, so counting single IPv6 addresses would not limit it).
struct ConnectionLimits: Sendable {
    let maxTotal: Int
    let maxPerAddress: Int
    private(set) var total = 0
    private var perAddress: [String: Int] = [:]
    /// Addresses under the total cap only: the other live nodes of a cluster, which carry many
    /// clients' connections each (their relayed signaling counts against each client's address).
    var exempt: Set<String> = []

    init(maxTotal: Int, maxPerAddress: Int) {
        self.maxTotal = maxTotal
        self.maxPerAddress = maxPerAddress
    }

    /// Counts the connection in, or says why it may not come in.
    mutating func admit(_ address: String) -> LiveRoomError? {
        if total >= maxTotal {
            return LiveRoomError(ErrorCode.serverFull, "the server has \(maxTotal) connections, the most it allows; try again later")
        }
        let count = perAddress[address, default: 0]
        if count >= maxPerAddress, !exempt.contains(address) {
            return LiveRoomError(
                ErrorCode.tooManyConnectionsFromAddress, "your address has \(maxPerAddress) connections, the most one address may have; close one first")
        }
        perAddress[address] = count + 1
        total += 1
        return nil
    }

    /// Counts an admitted connection out.
    mutating func release(_ address: String) {
        guard let count = perAddress[address] else { return }
        perAddress[address] = count > 1 ? count - 1 : nil
        total -= 1
    }

    func count(of address: String) -> Int { perAddress[address, default: 0] }

    /// The key an address is counted under: the IPv4 address (also when written as an
    /// IPv4-mapped IPv6 address), the /64 prefix of an IPv6 address, or "local".
    static func key(_ address: SocketAddress?) -> String {
        switch address {
        case .v4?:
            return address?.ipAddress ?? "local"
        case .v6(let v6)?:
            let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
                return bytes[12...].map(String.init).joined(separator: ".")
            }
            return stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }.joined(separator: ":") + "::/64"
        default:
            return "local"
        }
    }
}

/// ``ConnectionLimits`` shared by every connection's task.
final class ConnectionGate: Sendable {
    private let limits: Mutex<ConnectionLimits>

    init(maxTotal: Int, maxPerAddress: Int) {
        limits = Mutex(ConnectionLimits(maxTotal: maxTotal, maxPerAddress: maxPerAddress))
    }

    func admit(_ address: String) -> LiveRoomError? { limits.withLock { $0.admit(address) } }
    /// Sets the addresses under the total cap only (``ConnectionLimits/exempt``).
    func exempt(_ addresses: Set<String>) { limits.withLock { $0.exempt = addresses } }
    func release(_ address: String) { limits.withLock { $0.release(address) } }
    var total: Int { limits.withLock { $0.total } }
}
