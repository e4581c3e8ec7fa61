import Crypto
import Foundation
import LiveRoomProtocol

/// The pure parts of routing a signaling connection in cluster mode: which room its first
/// frame enters, and the token by which nodes know each other's relayed connections.
enum ClusterRouting {
    /// The room key a signaling frame enters, when it is a valid `enterRoom`; nil for anything
    /// else (that frame is answered here, as on a single node).
    static func enteredRoomKey(_ text: String) -> String? {
        guard case .room(.enterRoom(let params))? = try? SignalingRequest.parse(text) else { return nil }
        return params.room.key
    }

    /// Header names of a relayed connection.
    static let tokenHeader = "x-liveroom-relay-token"
    static let nodeHeader = "x-liveroom-relay-node"
    static let clientAddressHeader = "x-liveroom-client-address"

    /// The relay token: hex of HMAC-SHA256 with the application's secret key over a fixed
    /// label. Every node of one application has the same secret key (UserSigs must verify on
    /// each), so each can prove to the others that a connection is a relay, which then counts
    /// against the client's address instead of the relaying node's.
    static func relayToken(secretKey: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data("liveroom-node-relay-v1".utf8), using: SymmetricKey(data: Data(secretKey.utf8)))
        return mac.map { String(format: "%02x", $0) }.joined()
    }

    /// Whether `presented` is the token, compared in constant time.
    static func isRelayToken(_ presented: String?, expected: String) -> Bool {
        guard let presented, presented.utf8.count == expected.utf8.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(presented.utf8, expected.utf8) { difference |= a ^ b }
        return difference == 0
    }

    /// A forwarded client address as the connection gate keys it: at most 64 characters of
    /// hex digits, dots, colons and slashes; anything else is not used.
    static func forwardedAddress(_ text: String?) -> String? {
        guard let text, (1...64).contains(text.utf8.count),
            text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x3A) || ($0 >= 0x61 && $0 <= 0x66) || ($0 >= 0x41 && $0 <= 0x46) || $0 == 0x2E || $0 == 0x2F })
        else { return nil }
        return text
    }

    /// The signaling WebSocket URL of a node's `http(s)://host:port`.
    static func signalingWebSocketURL(_ base: String) -> String? {
        var base = base
        while base.hasSuffix("/") { base.removeLast() }
        if base.hasPrefix("http://") { return "ws://" + base.dropFirst(7) + "/ws" }
        if base.hasPrefix("https://") { return "wss://" + base.dropFirst(8) + "/ws" }
        return nil
    }
}
