#if canImport(Glibc)
import Glibc
#endif
import LiveRoomWire
import NIOCore
import Testing

@testable import LiveRoomServer

/// What the media loops rely on: in a group of sockets sharing a port (SO_REUSEPORT), one
/// connected to a client gets all that client's datagrams, and the others get the rest.
@Suite struct ConnectedSocketTests {
    func send(_ byte: UInt8, from fd: CInt, toPort port: UInt16) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        var payload = byte
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, &payload, 1, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    func drain(_ fd: CInt) -> [UInt8] {
        var received: [UInt8] = []
        var byte: UInt8 = 0
        while recv(fd, &byte, 1, Int32(MSG_DONTWAIT)) == 1 { received.append(byte) }
        return received
    }

    @Test func aSocketConnectedToAClientOnTheSharedPortGetsAllItsDatagrams() throws {
        let first = try MediaService.udpSocket(bound: try SocketAddress(ipAddress: "127.0.0.1", port: 0), sharedPort: true)
        defer { close(first) }
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(first, $0, &length) } }
        let port = UInt16(bigEndian: address.sin_port)
        let local = try SocketAddress(ipAddress: "127.0.0.1", port: Int(port))
        let second = try MediaService.udpSocket(bound: local, sharedPort: true)
        defer { close(second) }

        let clients = try (0..<8).map { _ in try loopbackUDPSocket() }
        defer { for (fd, _) in clients { close(fd) } }
        // Every other client gets a socket of its own, connected to it.
        var connected: [Int: CInt] = [:]
        for index in stride(from: 0, to: clients.count, by: 2) {
            connected[index] = try MediaService.udpSocket(
                bound: local, sharedPort: true, connectedTo: TransportAddress(address: .v4(0x7F00_0001), port: clients[index].1))
        }
        defer { for fd in connected.values { close(fd) } }
        for round in 0..<20 {
            for (index, client) in clients.enumerated() { send(UInt8(index * 20 + round), from: client.0, toPort: port) }
        }
        let shared = drain(first) + drain(second)
        for (index, fd) in connected {
            #expect(drain(fd) == (0..<20).map { UInt8(index * 20 + $0) }, "client \(index): all its datagrams, on its socket")
        }
        #expect(shared.sorted() == clients.indices.filter { connected[$0] == nil }.flatMap { index in (0..<20).map { UInt8(index * 20 + $0) } })
    }
}
