import LiveRoomSFU
import LiveRoomWire
import NIOCore
import Synchronization

/// The event loops of one media port, as each loop's handler sees the others.
///
/// Each loop has its own UDP socket on the port (`SO_REUSEPORT`: the kernel spreads clients
/// over the sockets by their address) and its own router, which owns the peer connections made
/// on that loop. What belongs to another loop is handed to it in one batch per read burst,
/// never with a lock per packet: a datagram the kernel gave the wrong socket, a write to an
/// ICE-TCP connection (they all live on the first loop), and a publisher's packets for the
/// subscribers on the other loops. The only state the loops share is which loop a client
/// address is bound to, read when a datagram is not the receiving loop's own.
final class MediaLoops: Sendable {
    enum Handoff: Sendable {
        /// A datagram from a client, received on another loop's socket.
        case datagram(ByteBuffer, from: TransportAddress)
        /// A datagram to write to an ICE-TCP connection of this loop.
        case write(ByteBuffer, to: TransportAddress)
        /// A message from the other loop's router.
        case relay(SFURouter.Relay)
        /// What a node relay datagram (or the node relay's timer) asks of every loop.
        case node(NodeMediaRelay.Action)

        /// Whether a full queue may drop it: media may go, what keeps the routers' view of
        /// publishers in step may not.
        var isMedia: Bool {
            switch self {
            // Sender reports come again within seconds; a flood of them may go like media.
            case .datagram, .write, .relay(.packet), .relay(.senderReport): true
            case .relay: false
            case .node(let action): action.isMedia
            }
        }
    }

    struct Member: Sendable {
        let eventLoop: any EventLoop
        let handler: NIOLoopBound<MediaChannelHandler>
    }

    /// The most hand-offs that may wait for one loop; beyond that its media hand-offs are dropped
    /// (a loop that cannot keep up loses packets, as its socket would, instead of queueing them).
    static let maximumQueued = 16_384

    private final class Depth: Sendable {
        let queued = Atomic<Int>(0)
    }

    private let members: [Member]
    private let depths: [Depth]
    private let owners = Mutex<[TransportAddress: Int]>([:])
    private let droppedCount = Atomic<Int>(0)

    init(members: [Member]) {
        self.members = members
        depths = members.map { _ in Depth() }
    }

    var count: Int { members.count }

    /// Hand-offs dropped because their loop had ``maximumQueued`` waiting.
    var dropped: Int { droppedCount.load(ordering: .relaxed) }

    /// The loop whose router a valid check bound `address` to.
    func owner(of address: TransportAddress) -> Int? {
        owners.withLock { $0[address] }
    }

    func bind(_ address: TransportAddress, to loop: Int) {
        owners.withLock { $0[address] = loop }
    }

    /// Forgets addresses that led to `loop` (another loop may have bound one since).
    func release(_ addresses: [TransportAddress], from loop: Int) {
        owners.withLock { owners in
            for address in addresses where owners[address] == loop { owners[address] = nil }
        }
    }

    /// Hands `batch` from loop `origin` to loop `other`, to be carried out there in order.
    func send(_ batch: [Handoff], from origin: Int, to other: Int) {
        guard members.indices.contains(other) else { return }
        let depth = depths[other]
        var batch = batch
        if depth.queued.add(batch.count, ordering: .relaxed).newValue > Self.maximumQueued {
            let kept = batch.filter { !$0.isMedia }
            depth.queued.subtract(batch.count - kept.count, ordering: .relaxed)
            droppedCount.add(batch.count - kept.count, ordering: .relaxed)
            guard !kept.isEmpty else { return }
            batch = kept
        }
        let member = members[other]
        let handed = batch
        member.eventLoop.execute {
            member.handler.value.receive(handed, from: origin)
            depth.queued.subtract(handed.count, ordering: .relaxed)
        }
    }
}
