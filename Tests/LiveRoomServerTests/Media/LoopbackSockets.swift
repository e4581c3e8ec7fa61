#if canImport(Glibc)
import Glibc
#endif
import TestTools
import Testing

/// A bound, non-blocking IPv4 UDP socket on 127.0.0.1 and its port.
func loopbackUDPSocket() throws -> (CInt, UInt16) {
    let (fd, port) = try bindLoopback(type: Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
    var size: CInt = 8 << 20
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<CInt>.size))
    return (fd, port)
}

/// Every datagram waiting on `fd`.
func drainDatagrams(_ fd: CInt) -> [[UInt8]] {
    var received: [[UInt8]] = []
    var buffer = [UInt8](repeating: 0, count: 2048)
    while true {
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count >= 0 else { return received }
        received.append(Array(buffer[..<count]))
    }
}
