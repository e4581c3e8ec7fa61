#if canImport(Glibc)
import Glibc
#endif

/// An array of `struct mmsghdr` for sendmmsg(2), which Swift's Glibc module leaves out (a GNU
/// extension): each a `msghdr` then the `unsigned int msg_len`, padded to the struct's
/// alignment. The media port sends its datagrams through it, and sfu-bench's crypto floor too.
public final class MessageBatch {
    public typealias SendMMsg = @convention(c) (Int32, UnsafeMutableRawPointer?, UInt32, Int32) -> Int32

    /// sendmmsg from libc, looked up at run time (nil where the C library has none).
    public static let sendmmsg: SendMMsg? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "sendmmsg") else { return nil }
        return unsafeBitCast(symbol, to: SendMMsg.self)
    }()

    /// The most messages one call takes (UIO_MAXIOV).
    public static let maximumCount = 1024

    static let stride: Int = {
        let alignment = MemoryLayout<msghdr>.alignment
        return (MemoryLayout<msghdr>.size + MemoryLayout<UInt32>.size + alignment - 1) / alignment * alignment
    }()

    private let storage: UnsafeMutableRawPointer
    public let capacity: Int

    public init(count: Int) {
        capacity = count
        storage = .allocate(byteCount: count * Self.stride, alignment: MemoryLayout<msghdr>.alignment)
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: count * Self.stride)
    }

    deinit { storage.deallocate() }

    /// Message `index`: one buffer `iov` to the socket address `name`.
    public func set(_ index: Int, name: UnsafeMutableRawPointer, nameLength: socklen_t, iov: UnsafeMutablePointer<iovec>) {
        var header = msghdr()
        header.msg_name = name
        header.msg_namelen = nameLength
        header.msg_iov = iov
        header.msg_iovlen = 1
        (storage + index * Self.stride).storeBytes(of: header, as: msghdr.self)
    }

    /// Sends messages `start ..< start + count` on `fd` (count at most ``maximumCount``) with
    /// `flags`: how many went, or -1 with `errno` set. Requires ``sendmmsg``.
    public func send(on fd: Int32, from start: Int, count: Int, flags: Int32 = 0) -> Int32 {
        Self.sendmmsg!(fd, storage + start * Self.stride, UInt32(count), flags)
    }
}
