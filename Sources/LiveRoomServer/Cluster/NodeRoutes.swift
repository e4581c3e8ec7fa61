import Hummingbird
import LiveRoomCluster
import LiveRoomProtocol
import NIOCore

/// Cluster mode: what one node tells another over HTTP (`POST /v1/cluster/message`, a
/// ``NodeMessage``), each call carrying the relay token (``ClusterForwarding/isForwarded(_:)``);
/// without it, or on a server that runs alone, 403. A message that is not one, or names nothing
/// here, is answered with a code and a reason (400 when it is not a message).
struct NodeRoutes: Sendable {
    let hub: RoomHub
    let forwarding: ClusterForwarding?

    func add(to router: Router<ServerRequestContext>) {
        router.post(RouterPath(NodeMessage.path)) { request, _ -> Response in
            guard forwarding?.isForwarded(request) == true else { return LiveRoomServer.notFromNode() }
            let body = try await request.body.collect(upTo: NodeMessage.maximumSize)
            do throws(LiveRoomError) {
                return LiveRoomServer.json(try await answer(to: try NodeMessage.parse(String(buffer: body))))
            } catch {
                return LiveRoomServer.json(["ErrorCode": .number(Double(error.code)), "ErrorMessage": .string(error.message)], status: .badRequest)
            }
        }
    }

    private func answer(to message: NodeMessage) async throws(LiveRoomError) -> JSONValue {
        switch message {
        case .pk(let message):
            // A linked room's home node tells this one about a PK link.
            return await hub.pkPeerMessage(message)
        case .task(let message):
            // A task's home and the node running its runner (TaskHosting.swift).
            return await hub.tasks.taskHostMessage(message)
        case .playback(let message):
            // The other end of a WHEP session whose media and seat are on two nodes ended it.
            let known = await hub.mediaSessions.remotePlaybackMessage(message)
            return ["ErrorCode": .number(Double(known ? 0 : ErrorCode.invalidParameter)), "ErrorMessage": .string(known ? "" : "no such session from that node")]
        case .media:
            throw LiveRoomError(ErrorCode.invalidParameter, "media frames travel in the relayed connection")
        }
    }
}
