import Hummingbird
import LiveRoomCluster
import LiveRoomProtocol
import NIOCore

/// Cluster mode: what one node tells another over HTTP, each call carrying the relay token
/// (``ClusterForwarding/isForwarded(_:)``); without it, or on a server that runs alone, 403.
struct NodeRoutes: Sendable {
    let hub: RoomHub
    let forwarding: ClusterForwarding?

    func add(to router: Router<RequestContext>) {
        // A linked room's home node tells this one about a PK link (PKPeerMessage).
        router.post(RouterPath(PKPeerMessage.path)) { request, _ -> Response in
            guard forwarding?.isForwarded(request) == true else { return LiveRoomServer.notFromNode(code: ErrorCode.pkInvalidParameter) }
            let body = try await request.body.collect(upTo: PKPeerMessage.maxBodyBytes)
            do throws(LiveRoomError) {
                return LiveRoomServer.json(await hub.pkPeerMessage(try PKPeerMessage.parse(String(buffer: body))))
            } catch {
                return LiveRoomServer.json(["ErrorCode": .number(Double(error.code)), "ErrorMessage": .string(error.message)], status: .badRequest)
            }
        }

        // A task's home and the node running its runner (TaskHosting.swift).
        router.post(RouterPath(TaskHostMessage.path)) { request, _ -> Response in
            guard forwarding?.isForwarded(request) == true else { return LiveRoomServer.notFromNode(code: ErrorCode.invalidParameter) }
            let body = try await request.body.collect(upTo: TaskHostMessage.maxBodyBytes)
            guard let message = TaskHostMessage.parse(String(buffer: body)) else {
                return LiveRoomServer.json(
                    ["ErrorCode": .number(Double(ErrorCode.invalidParameter)), "ErrorMessage": "not a task message"], status: .badRequest)
            }
            return LiveRoomServer.json(await hub.taskHostMessage(message))
        }

        // The other end of a WHEP session whose media and seat are on two nodes ended it (RemotePlayback).
        router.post(RouterPath(RemotePlayback.path)) { request, _ -> Response in
            guard forwarding?.isForwarded(request) == true else { return LiveRoomServer.notFromNode(code: ErrorCode.invalidParameter) }
            let body = try await request.body.collect(upTo: 1024)
            guard let message = RemotePlayback.Message.parse(String(buffer: body)) else {
                return LiveRoomServer.json(
                    ["ErrorCode": .number(Double(ErrorCode.invalidParameter)), "ErrorMessage": "not a WHEP session message"], status: .badRequest)
            }
            let known = await hub.remotePlaybackMessage(message)
            return LiveRoomServer.json(
                ["ErrorCode": .number(Double(known ? 0 : ErrorCode.invalidParameter)), "ErrorMessage": .string(known ? "" : "no such session from that node")])
        }
    }
}
