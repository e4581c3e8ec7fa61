import NIOCore

/// Reassembles H.264 RTP payloads (packetization-mode 1: single NAL, STAP-A, FU-A)
/// into access units. Feed packets in sequence order (after any jitter buffer).
public struct H264Depacketizer: Sendable {
    /// Access units larger than this are dropped with an error, bounding memory.
    public var maximumAccessUnitSize: Int

    private var current: H264AccessUnit?
    private var currentSize = 0
    private var fragment: ByteBuffer?
    private var lastSequenceNumber: UInt16?

    /// Creates a depacketizer.
    public init(maximumAccessUnitSize: Int = 8 << 20) {
        self.maximumAccessUnitSize = maximumAccessUnitSize
    }

    /// Adds one RTP packet's payload and returns the access units it completes: the
    /// previous one if this packet has a new timestamp, and the current one if
    /// `marker` is set. Malformed payloads throw and mark the current unit incomplete.
    public mutating func push(payload: ByteBuffer, sequenceNumber: UInt16, timestamp: UInt32, marker: Bool) throws(WireError) -> [H264AccessUnit] {
        var completed: [H264AccessUnit] = []
        if let unit = current, unit.timestamp != timestamp {
            completed.append(finishCurrent(complete: false))
        }
        if let last = lastSequenceNumber, sequenceNumber != last &+ 1 {
            markLoss()
        }
        lastSequenceNumber = sequenceNumber
        if current == nil {
            current = H264AccessUnit(timestamp: timestamp, nalUnits: [], isComplete: true)
            currentSize = 0
        }
        let parsed: H264RTPPayload
        do {
            parsed = try H264RTPPayload.parse(payload)
        } catch {
            markLoss()
            throw error
        }
        switch parsed {
        case .singleNALUnit(let unit):
            try append(unit)
        case .aggregation(let units):
            for unit in units { try append(unit) }
        case .fragment(let piece):
            if piece.isStart {
                if fragment != nil { markLoss() }
                var buffer = ByteBuffer()
                buffer.writeInteger(piece.nalHeader)
                fragment = buffer
            }
            if var partial = fragment {
                fragment = nil  // avoid a copy-on-write of the accumulating buffer
                var data = piece.data
                guard partial.readableBytes + data.readableBytes + currentSize <= maximumAccessUnitSize else {
                    markLoss()
                    throw .malformed("H.264 access unit exceeds \(maximumAccessUnitSize) bytes")
                }
                partial.writeBuffer(&data)
                if piece.isEnd {
                    try append(partial)
                } else {
                    fragment = partial
                }
            } else {
                markLoss()  // middle or end fragment whose start was lost
            }
        }
        if marker {
            completed.append(finishCurrent(complete: true))
        }
        return completed
    }

    /// Returns the access unit in progress, if any, marked incomplete (end of stream).
    public mutating func flush() -> H264AccessUnit? {
        guard current != nil else { return nil }
        return finishCurrent(complete: false)
    }

    private mutating func append(_ unit: ByteBuffer) throws(WireError) {
        guard currentSize + unit.readableBytes <= maximumAccessUnitSize else {
            markLoss()
            throw .malformed("H.264 access unit exceeds \(maximumAccessUnitSize) bytes")
        }
        currentSize += unit.readableBytes
        current?.nalUnits.append(unit)
    }

    private mutating func markLoss() {
        current?.isComplete = false
        fragment = nil
    }

    private mutating func finishCurrent(complete: Bool) -> H264AccessUnit {
        var unit = current!
        if fragment != nil || !complete { unit.isComplete = false }
        current = nil
        fragment = nil
        currentSize = 0
        return unit
    }
}
