import LiveRoomWire
import NIOCore

/// Where a router writes the RTP it forwards over UDP, when its port gives it one: straight
/// into the storage the datagram is sent from, with no buffer and no output per packet.
/// The router also queues its peers' ICE and DTLS datagrams here, so that a subscriber's
/// last DTLS flight leaves before the keyframe sent when it connects. Used on the router's
/// own loop only.
public protocol DatagramSink: AnyObject {
    /// Queues a datagram built elsewhere (ICE, DTLS), in order with those written.
    func send(_ datagram: ByteBuffer, to destination: TransportAddress)

    /// Lends `fill` storage for one datagram of up to `capacity` bytes to `destination`.
    /// `fill` writes the datagram and returns its length, or nil to send nothing. Returns what
    /// `fill` returned: the datagram is then queued for the port's next flush. `arrival` is
    /// when the live packet it forwards reached the server (nil for a resent one), for the
    /// fan-out delay.
    func write(
        to destination: TransportAddress, capacity: Int, arrival: ContinuousClock.Instant?, _ fill: (UnsafeMutableRawBufferPointer) -> Int?
    ) -> Int?
}
