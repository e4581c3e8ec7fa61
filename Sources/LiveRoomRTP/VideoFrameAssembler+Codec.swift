import LiveRoomWire

extension VideoFrameAssembler {
    /// Adds a received RTP packet of a `codec` stream: its payload format tells where frames
    /// start and which are keyframes. The client's subscriptions and the task runner's
    /// inputs both reassemble video through here.
    public mutating func insert(_ packet: RTPPacket, codec: VideoCodec, now: ContinuousClock.Instant) -> [Action] {
        let header = packet.header
        let (startsFrame, marksKeyframe) = VideoPayloadFormat.describe(packet.payload, codec: codec)
        let described = Packet(
            sequenceNumber: header.sequenceNumber, timestamp: header.timestamp, marker: header.marker, payload: packet.payload,
            startsFrame: startsFrame, marksKeyframe: marksKeyframe, arrival: now, headerExtension: header.headerExtension)
        return insert(described, now: now)
    }
}
