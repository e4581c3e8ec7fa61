#if canImport(Glibc)
import Glibc
#endif
import Testing

/// A socket of `type` bound on 127.0.0.1 (a free port) and its port.
func loopbackSocket(type: Int32) throws -> (CInt, UInt16) {
    let fd = socket(AF_INET, type, 0)
    try #require(fd >= 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    try #require(bound)
    return (fd, UInt16(bigEndian: address.sin_port))
}

/// A bound, non-blocking IPv4 UDP socket on 127.0.0.1 and its port.
func loopbackUDPSocket() throws -> (CInt, UInt16) {
    let (fd, port) = try loopbackSocket(type: Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue))
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
