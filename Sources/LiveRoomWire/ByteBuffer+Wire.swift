import NIOCore

// Throwing readers so every parser reports truncation as a `WireError` instead of
// juggling optionals. `what` names the field for the error message.
extension ByteBuffer {
    @inline(__always)
    mutating func readWireInteger<T: FixedWidthInteger>(as: T.Type = T.self, _ what: @autoclosure () -> String) throws(WireError) -> T {
        guard let value = self.readInteger(as: T.self) else {
            throw WireError.truncated("\(what()): needs \(MemoryLayout<T>.size) bytes, \(self.readableBytes) left")
        }
        return value
    }

    @inline(__always)
    mutating func readWireSlice(length: Int, _ what: @autoclosure () -> String) throws(WireError) -> ByteBuffer {
        guard length >= 0, let slice = self.readSlice(length: length) else {
            throw WireError.truncated("\(what()): needs \(length) bytes, \(self.readableBytes) left")
        }
        return slice
    }

    @inline(__always)
    mutating func readWireBytes(length: Int, _ what: @autoclosure () -> String) throws(WireError) -> [UInt8] {
        guard length >= 0, let bytes = self.readBytes(length: length) else {
            throw WireError.truncated("\(what()): needs \(length) bytes, \(self.readableBytes) left")
        }
        return bytes
    }

    @inline(__always)
    mutating func skipWireBytes(_ length: Int, _ what: @autoclosure () -> String) throws(WireError) {
        guard length >= 0, length <= self.readableBytes else {
            throw WireError.truncated("\(what()): needs \(length) bytes, \(self.readableBytes) left")
        }
        self.moveReaderIndex(forwardBy: length)
    }

    /// Writes `count` zero bytes.
    @inline(__always)
    mutating func writeZeros(_ count: Int) {
        if count > 0 { self.writeRepeatingByte(0, count: count) }
    }
}
