import LiveRoomProtocol
import NIOCore
import Testing

@testable import LiveRoomServer

@Suite struct ConnectionLimitsTests {
    @Test func admitsUnderBothLimitsAndCountsOut() {
        var limits = ConnectionLimits(maxTotal: 3, maxPerAddress: 2)
        #expect(limits.admit("a") == nil)
        #expect(limits.admit("a") == nil)
        #expect(limits.admit("a")?.code == ErrorCode.tooManyConnectionsFromAddress)
        #expect(limits.admit("b") == nil)
        #expect(limits.admit("c")?.code == ErrorCode.serverFull)
        limits.release("a")
        #expect(limits.count(of: "a") == 1 && limits.total == 2)
        #expect(limits.admit("c") == nil)
        limits.release("never admitted")
        #expect(limits.total == 3, "releasing an unknown address changes nothing")
    }

    @Test func anExemptAddressIsUnderTheTotalCapOnly() {
        var limits = ConnectionLimits(maxTotal: 4, maxPerAddress: 1)
        limits.exempt = ["node"]
        #expect(limits.admit("node") == nil && limits.admit("node") == nil && limits.admit("node") == nil)
        #expect(limits.admit("client") == nil)
        #expect(limits.admit("node")?.code == ErrorCode.serverFull)
        limits.release("node")
        #expect(limits.count(of: "node") == 2 && limits.total == 3)
    }

    @Test func addressesAreCountedByIPv4AddressOrIPv6Slash64() throws {
        #expect(ConnectionLimits.key(try SocketAddress(ipAddress: "203.0.113.7", port: 1)) == "203.0.113.7")
        let one = ConnectionLimits.key(try SocketAddress(ipAddress: "2001:db8:1:2:aaaa::1", port: 1))
        let two = ConnectionLimits.key(try SocketAddress(ipAddress: "2001:db8:1:2:bbbb::9", port: 2))
        #expect(one == two && one == "2001:db8:1:2::/64")
        #expect(ConnectionLimits.key(try SocketAddress(ipAddress: "2001:db8:1:3::1", port: 1)) != one)
        #expect(ConnectionLimits.key(try SocketAddress(ipAddress: "::ffff:203.0.113.7", port: 1)) == "203.0.113.7")
        #expect(ConnectionLimits.key(nil) == "local")
    }
}
