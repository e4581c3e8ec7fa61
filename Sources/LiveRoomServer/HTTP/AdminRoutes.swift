import Hummingbird
import LiveRoomAdmin
import LiveRoomCluster
import LiveRoomProtocol
import Logging

/// The admin REST API (`POST /v1/<Action>`), TRTC's IM group message (`send_group_msg`) and the
/// cluster's node list, each checked against the administrator's UserSig. In cluster mode a call
/// about a room homed on another node is forwarded there.
struct AdminRoutes: Sendable {
    let hub: RoomHub
    let admin: AdminAPI
    let auth: AdminAuth
    let cluster: ClusterMembership?
    let forwarding: ClusterForwarding?
    let logger: Logger

    func add(to router: Router<ServerRequestContext>) {
        router.post("/v1/:action") { request, context -> Response in
            let action = try context.parameters.require("action")
            if let refusal = LiveRoomServer.refusal(request, auth: auth, body: AdminAPI.authFailure) { return refusal }
            let body = try await request.body.collect(upTo: AdminRequest.maxBodyBytes)
            logger.info("Admin call", metadata: [LogKey.action: "\(action)"])
            if let forwarding, !forwarding.isForwarded(request), let home = await forwarding.home(ofCall: action, body: String(buffer: body)) {
                if let answer = await forwarding.forwardCall(uri: request.uri.string, body: body, to: home) { return answer }
                return LiveRoomServer.json(AdminAPI.homeUnreachable(home.nodeId))
            }
            return LiveRoomServer.json(await admin.call(action, body: String(buffer: body)))
        }

        router.get("/v1/cluster/nodes") { request, _ -> Response in
            if let refusal = LiveRoomServer.refusal(request, auth: auth, body: AdminAPI.authFailure) { return refusal }
            return LiveRoomServer.json(await ClusterAdmin.describe(cluster, hub: hub))
        }

        router.post("/v4/group_open_http_svc/send_group_msg") { request, _ -> Response in
            if let refusal = LiveRoomServer.refusal(request, auth: auth, body: AdminAPI.imAuthFailure) { return refusal }
            let body = try await request.body.collect(upTo: AdminRequest.maxBodyBytes)
            if let forwarding, !forwarding.isForwarded(request), let home = await forwarding.home(ofGroupMessage: String(buffer: body)) {
                if let answer = await forwarding.forwardCall(uri: request.uri.string, body: body, to: home) { return answer }
                return LiveRoomServer.json(AdminAPI.imHomeUnreachable(home.nodeId))
            }
            return LiveRoomServer.json(await admin.sendGroupMessage(body: String(buffer: body)))
        }
    }
}
