import LiveRoomTransport
import LiveRoomWire
import NIOCore

/// What every client peer connection asks of its owner, whatever else it reports.
protocol ConnectionEvent {
    static func send(_ datagram: ByteBuffer, to: TransportAddress) -> Self
    /// DTLS is up: media may flow.
    static var connected: Self { get }
    /// ICE chose the path media takes (again, after an ICE restart).
    static func selected(_ address: TransportAddress) -> Self
    static func closed(reason: String) -> Self
}

extension ConnectionEvent {
    /// A connection's events for its transport's: RTP and RTCP go to the connection's own
    /// handlers, the rest map one to one.
    static func of(_ events: [PeerTransport.Event], rtp: ([UInt8]) -> [Self], rtcp: ([UInt8]) -> [Self]) -> [Self] {
        var result: [Self] = []
        for event in events {
            switch event {
            case .send(let datagram, let to): result.append(.send(datagram, to: to))
            case .selected(let address): result.append(.selected(address))
            case .connected: result.append(.connected)
            case .rtp(let packet): result += rtp(packet)
            case .rtcp(let packet): result += rtcp(packet)
            case .closed(let reason): result.append(.closed(reason: reason))
            }
        }
        return result
    }
}
