import NIOCore

/// The VP8 RTP payload descriptor (RFC 7741 §4.2).
public struct VP8PayloadDescriptor: Hashable, Sendable {
    /// A 7- or 15-bit PictureID.
    public enum PictureID: Hashable, Sendable {
        /// M=0: a 7-bit id.
        case sevenBit(UInt8)
        /// M=1: a 15-bit id.
        case fifteenBit(UInt16)

        /// The numeric id.
        public var value: UInt16 {
            switch self {
            case .sevenBit(let value): return UInt16(value & 0x7F)
            case .fifteenBit(let value): return value & 0x7FFF
            }
        }

        /// The next id, wrapping within the same width.
        public var next: PictureID {
            switch self {
            case .sevenBit(let value): return .sevenBit((value &+ 1) & 0x7F)
            case .fifteenBit(let value): return .fifteenBit((value &+ 1) & 0x7FFF)
            }
        }
    }

    /// N: the frame can be discarded without affecting others.
    public var nonReference: Bool
    /// S: this packet starts a VP8 partition.
    public var startOfPartition: Bool
    /// PID: the partition index (0–7).
    public var partitionIndex: UInt8
    /// I: the PictureID, if present.
    public var pictureID: PictureID?
    /// L: TL0PICIDX, if present.
    public var tl0PictureIndex: UInt8?
    /// T: the temporal layer index TID (0–3), if present.
    public var temporalLayerID: UInt8?
    /// Y: layer sync bit (meaningful with T).
    public var layerSync: Bool
    /// K: KEYIDX (0–31), if present.
    public var keyIndex: UInt8?

    /// Creates a descriptor.
    public init(nonReference: Bool = false, startOfPartition: Bool, partitionIndex: UInt8 = 0, pictureID: PictureID? = nil,
                tl0PictureIndex: UInt8? = nil, temporalLayerID: UInt8? = nil, layerSync: Bool = false, keyIndex: UInt8? = nil) {
        self.nonReference = nonReference
        self.startOfPartition = startOfPartition
        self.partitionIndex = partitionIndex
        self.pictureID = pictureID
        self.tl0PictureIndex = tl0PictureIndex
        self.temporalLayerID = temporalLayerID
        self.layerSync = layerSync
        self.keyIndex = keyIndex
    }

    /// X: whether the extension byte is present.
    public var hasExtension: Bool {
        pictureID != nil || tl0PictureIndex != nil || temporalLayerID != nil || keyIndex != nil
    }

    /// The descriptor size in bytes when serialized.
    public var size: Int {
        var size = 1
        if hasExtension { size += 1 }
        switch pictureID {
        case .sevenBit: size += 1
        case .fifteenBit: size += 2
        case nil: break
        }
        if tl0PictureIndex != nil { size += 1 }
        if temporalLayerID != nil || keyIndex != nil { size += 1 }
        return size
    }

    /// Reads a descriptor, leaving `buffer` at the VP8 payload.
    public static func read(from buffer: inout ByteBuffer) throws(WireError) -> VP8PayloadDescriptor {
        let first = try buffer.readWireInteger(as: UInt8.self, "VP8 descriptor")
        var descriptor = VP8PayloadDescriptor(
            nonReference: first & 0x20 != 0, startOfPartition: first & 0x10 != 0, partitionIndex: first & 0x07)
        guard first & 0x80 != 0 else { return descriptor }
        let ext = try buffer.readWireInteger(as: UInt8.self, "VP8 descriptor extension")
        if ext & 0x80 != 0 {
            let high = try buffer.readWireInteger(as: UInt8.self, "VP8 PictureID")
            if high & 0x80 != 0 {
                let low = try buffer.readWireInteger(as: UInt8.self, "VP8 15-bit PictureID")
                descriptor.pictureID = .fifteenBit(UInt16(high & 0x7F) << 8 | UInt16(low))
            } else {
                descriptor.pictureID = .sevenBit(high)
            }
        }
        if ext & 0x40 != 0 {
            descriptor.tl0PictureIndex = try buffer.readWireInteger(as: UInt8.self, "VP8 TL0PICIDX")
        }
        if ext & 0x30 != 0 {
            let byte = try buffer.readWireInteger(as: UInt8.self, "VP8 TID/KEYIDX")
            if ext & 0x20 != 0 {
                descriptor.temporalLayerID = byte >> 6
                descriptor.layerSync = byte & 0x20 != 0
            }
            if ext & 0x10 != 0 { descriptor.keyIndex = byte & 0x1F }
        }
        return descriptor
    }

    /// Appends the descriptor to `buffer`.
    public func write(into buffer: inout ByteBuffer) throws(WireError) {
        guard partitionIndex <= 7 else { throw .invalidArgument("VP8 partition index \(partitionIndex) exceeds 3 bits") }
        if let temporalLayerID, temporalLayerID > 3 { throw .invalidArgument("VP8 TID \(temporalLayerID) exceeds 2 bits") }
        if let keyIndex, keyIndex > 31 { throw .invalidArgument("VP8 KEYIDX \(keyIndex) exceeds 5 bits") }
        var first = partitionIndex
        if hasExtension { first |= 0x80 }
        if nonReference { first |= 0x20 }
        if startOfPartition { first |= 0x10 }
        buffer.writeInteger(first)
        guard hasExtension else { return }
        var ext: UInt8 = 0
        if pictureID != nil { ext |= 0x80 }
        if tl0PictureIndex != nil { ext |= 0x40 }
        if temporalLayerID != nil { ext |= 0x20 }
        if keyIndex != nil { ext |= 0x10 }
        buffer.writeInteger(ext)
        switch pictureID {
        case .sevenBit(let value): buffer.writeInteger(value & 0x7F)
        case .fifteenBit(let value): buffer.writeInteger(0x8000 | (value & 0x7FFF))
        case nil: break
        }
        if let tl0PictureIndex { buffer.writeInteger(tl0PictureIndex) }
        if temporalLayerID != nil || keyIndex != nil {
            var byte: UInt8 = 0
            if let temporalLayerID {
                byte |= temporalLayerID << 6
                if layerSync { byte |= 0x20 }
            }
            if let keyIndex { byte |= keyIndex }
            buffer.writeInteger(byte)
        }
    }
}
