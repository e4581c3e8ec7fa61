import LiveRoomWire
import NIOCore
import Testing

@testable import LiveRoomTransport

/// Datagram addresses go between NIO's SocketAddress and TransportAddress by their bytes.
@Suite struct SocketAddressTests {
    @Test(arguments: ["127.0.0.1", "192.0.2.200", "0.0.0.0", "::1", "2001:db8::8a2e:370:7334", "fe80::1:2:3:4", "::ffff:192.0.2.1"])
    func bytesAgreeWithText(_ text: String) throws {
        let expected = try SocketAddress(ipAddress: text, port: 50_000)
        let address = try #require(TransportAddress(expected))
        #expect(address.address == IPAddress(text) && address.port == 50_000)
        let back = try #require(address.socketAddress)
        #expect(back.ipAddress == expected.ipAddress && back.port == 50_000 && back.protocol == expected.protocol, "\(back) against \(expected)")
        #expect(back == expected)
    }

    @Test func aUnixSocketHasNoTransportAddress() throws {
        #expect(TransportAddress(try SocketAddress(unixDomainSocketPath: "/tmp/x")) == nil)
    }
}
