import NIOCore

/// One H.264 RTP payload in packetization mode 1 (RFC 6184 §5.6–5.8).
public enum H264RTPPayload: Hashable, Sendable {
    /// A fragment of a NAL unit carried in an FU-A.
    public struct Fragment: Hashable, Sendable {
        /// The reconstructed NAL header (F and NRI from the indicator, type from the FU header).
        public var nalHeader: UInt8
        /// S bit: the first fragment.
        public var isStart: Bool
        /// E bit: the last fragment.
        public var isEnd: Bool
        /// Fragment bytes (without FU indicator and header).
        public var data: ByteBuffer

        /// Creates a fragment.
        public init(nalHeader: UInt8, isStart: Bool, isEnd: Bool, data: ByteBuffer) {
            self.nalHeader = nalHeader
            self.isStart = isStart
            self.isEnd = isEnd
            self.data = data
        }

        /// The type of the fragmented NAL unit.
        public var nalType: UInt8 { H264NALUnitType.of(headerByte: nalHeader) }
    }

    /// A single NAL unit packet (types 1–23).
    case singleNALUnit(ByteBuffer)
    /// An STAP-A with its NAL units.
    case aggregation([ByteBuffer])
    /// An FU-A fragment.
    case fragment(Fragment)

    /// Parses one RTP payload. Interleaved-mode types (STAP-B, MTAP, FU-B) are
    /// rejected as unsupported; type 0 and 30–31 as malformed.
    public static func parse(_ payload: ByteBuffer) throws(WireError) -> H264RTPPayload {
        var payload = payload
        guard let header = payload.getInteger(at: payload.readerIndex, as: UInt8.self) else {
            throw .truncated("H.264 RTP payload is empty")
        }
        guard header & 0x80 == 0 else { throw .malformed("H.264 NAL header has the forbidden zero bit set") }
        let type = H264NALUnitType.of(headerByte: header)
        switch type {
        case 1...23:
            return .singleNALUnit(payload)
        case H264NALUnitType.stapA:
            payload.moveReaderIndex(forwardBy: 1)
            var units: [ByteBuffer] = []
            while payload.readableBytes > 0 {
                let size = Int(try payload.readWireInteger(as: UInt16.self, "H.264 STAP-A NAL size"))
                guard size > 0 else { throw .malformed("H.264 STAP-A holds a zero-length NAL unit") }
                let unit = try payload.readWireSlice(length: size, "H.264 STAP-A NAL unit")
                let unitHeader = unit.getInteger(at: unit.readerIndex, as: UInt8.self)!
                let unitType = H264NALUnitType.of(headerByte: unitHeader)
                guard (1...23).contains(unitType), unitHeader & 0x80 == 0 else {
                    throw .malformed("H.264 STAP-A holds NAL type \(unitType)")
                }
                units.append(unit)
            }
            guard !units.isEmpty else { throw .truncated("H.264 STAP-A holds no NAL unit") }
            return .aggregation(units)
        case H264NALUnitType.fuA:
            let indicator = try payload.readWireInteger(as: UInt8.self, "H.264 FU indicator")
            let fuHeader = try payload.readWireInteger(as: UInt8.self, "H.264 FU header")
            let isStart = fuHeader & 0x80 != 0
            let isEnd = fuHeader & 0x40 != 0
            guard !(isStart && isEnd) else { throw .malformed("H.264 FU-A has both start and end bits") }
            let fragmentType = fuHeader & 0x1F
            guard (1...23).contains(fragmentType) else { throw .malformed("H.264 FU-A fragments NAL type \(fragmentType)") }
            guard payload.readableBytes > 0 else { throw .truncated("H.264 FU-A carries no fragment data") }
            return .fragment(Fragment(nalHeader: (indicator & 0xE0) | fragmentType, isStart: isStart, isEnd: isEnd, data: payload))
        case H264NALUnitType.stapB, H264NALUnitType.mtap16, H264NALUnitType.mtap24, H264NALUnitType.fuB:
            throw .unsupported("H.264 RTP packet type \(type) needs interleaved mode (packetization-mode=2)")
        default:
            throw .malformed("H.264 RTP packet type \(type) is reserved")
        }
    }

    /// The types of the NAL units this packet carries or starts (empty for a
    /// continuation fragment).
    public var nalUnitTypes: [UInt8] {
        func type(_ unit: ByteBuffer) -> UInt8 {
            H264NALUnitType.of(headerByte: unit.getInteger(at: unit.readerIndex, as: UInt8.self) ?? 0)
        }
        switch self {
        case .singleNALUnit(let unit): return [type(unit)]
        case .aggregation(let units): return units.map(type)
        case .fragment(let fragment): return fragment.isStart ? [fragment.nalType] : []
        }
    }

    /// Whether this packet starts a keyframe: it carries (the start of) an IDR slice,
    /// or a sequence parameter set, which senders put first in every keyframe.
    public var startsKeyframe: Bool {
        let types = nalUnitTypes
        return types.contains(H264NALUnitType.idrSlice) || types.contains(H264NALUnitType.sps)
    }

    /// Serializes the payload.
    public func serialize() throws(WireError) -> ByteBuffer {
        var buffer = ByteBuffer()
        switch self {
        case .singleNALUnit(var unit):
            buffer.writeBuffer(&unit)
        case .aggregation(let units):
            guard let first = units.first?.getInteger(at: units.first!.readerIndex, as: UInt8.self) else {
                throw .invalidArgument("H.264 STAP-A needs at least one NAL unit")
            }
            // F is the OR of all F bits, NRI the maximum NRI.
            var header: UInt8 = H264NALUnitType.stapA | (first & 0x80)
            var nri: UInt8 = 0
            for unit in units {
                guard unit.readableBytes > 0, unit.readableBytes <= Int(UInt16.max) else {
                    throw .invalidArgument("H.264 STAP-A NAL unit of \(unit.readableBytes) bytes")
                }
                let unitHeader = unit.getInteger(at: unit.readerIndex, as: UInt8.self)!
                header |= unitHeader & 0x80
                nri = max(nri, unitHeader & 0x60)
            }
            buffer.writeInteger(header | nri)
            for var unit in units {
                buffer.writeInteger(UInt16(unit.readableBytes))
                buffer.writeBuffer(&unit)
            }
        case .fragment(let fragment):
            buffer.writeInteger((fragment.nalHeader & 0xE0) | H264NALUnitType.fuA)
            buffer.writeInteger((fragment.isStart ? 0x80 : 0) | (fragment.isEnd ? 0x40 : 0) | fragment.nalType)
            var data = fragment.data
            buffer.writeBuffer(&data)
        }
        return buffer
    }
}
