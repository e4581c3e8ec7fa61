#if canImport(Glibc)
import Glibc
#endif

/// A loopback socket could not be made or bound.
public struct LoopbackSocketError: Error, CustomStringConvertible {
    public var description: String
}

/// A socket of `type` (SOCK_STREAM or SOCK_DGRAM, with flags such as SOCK_NONBLOCK) bound on
/// 127.0.0.1:`port` (0: a free one), and the port it got. With `reuseAddress`, SO_REUSEADDR is
/// set first, so a test server can come back on the port it had. The caller closes it.
public func bindLoopback(type: Int32, port: UInt16 = 0, reuseAddress: Bool = false) throws -> (fd: Int32, port: UInt16) {
    let fd = socket(AF_INET, type, 0)
    guard fd >= 0 else { throw LoopbackSocketError(description: "socket: errno \(errno)") }
    if reuseAddress {
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else {
        let error = errno
        close(fd)
        throw LoopbackSocketError(description: "cannot bind 127.0.0.1:\(port): errno \(error)")
    }
    return (fd, UInt16(bigEndian: address.sin_port))
}

/// A TCP port on 127.0.0.1 no one listens on now: bound once and released (a server binds it next).
public func freeLoopbackPort() throws -> Int {
    let (fd, port) = try bindLoopback(type: Int32(SOCK_STREAM.rawValue))
    close(fd)
    return Int(port)
}
