import Foundation
import HTTPTypes
import Hummingbird
import LiveRoomAdmin
import LiveRoomCluster
import LiveRoomCommerce
import LiveRoomProtocol
import Logging
import NIOCore

/// Cluster mode: an admin call about a room's live state is carried out by the room's home
/// node, where the room lives (its members, its tasks, its clients, who hear of a product
/// changed, an order cancelled, a group message). The node the call reached forwards it there,
/// path, query (the caller's credentials, which the home checks again) and body unchanged, and
/// answers with the home's answer. A forwarded call carries the relay token and is never
/// forwarded again. Calls on stored state only (orders, history, battles) are answered where
/// they arrive: PostgreSQL holds them for every node.
struct AdminForwarding: Sendable {
    let membership: ClusterMembership
    let orders: any OrderStore
    let sdkAppId: UInt64
    let group: any EventLoopGroup
    let logger: Logger

    /// How long the home node has to answer a forwarded call.
    static let timeout: Duration = .seconds(10)
    /// The largest answer forwarded back.
    static let maxAnswerBytes = 4 << 20

    /// Whether the request is one another node forwarded (it carries the relay token).
    func isForwarded(_ request: Request) -> Bool {
        ClusterRouting.isRelayToken(request.headers[HTTPField.Name(ClusterRouting.tokenHeader)!], expected: membership.relayToken)
    }

    /// The home node to carry out admin call `action` with `body`; nil to carry it out here.
    func home(ofCall action: String, body: String) async -> NodeRegistration? {
        guard let request = try? AdminRequest.parse(action: action, body: body, sdkAppId: sdkAppId, now: Int(Date().timeIntervalSince1970)) else {
            return nil
        }
        var room = request.liveRoom?.key
        switch request {
        case .confirmOrder(let orderId), .cancelOrder(let orderId):
            // Settling an order changes stock its room's clients hear of.
            let orders = self.orders
            room = try? await withTimeout(ClusterMembership.databaseTimeout) { try await orders.order(orderId)?.roomId }
        default:
            break
        }
        guard let room else { return nil }
        return await membership.liveHome(ofRoom: room)
    }

    /// The home node of the room an IM `send_group_msg` names; nil to carry it out here.
    func home(ofGroupMessage body: String) async -> NodeRegistration? {
        guard let message = try? GroupMessage(body) else { return nil }
        return await membership.liveHome(ofRoom: RoomID.string(message.groupId).key)
    }

    /// Posts the call to `home` as it came (`uri`: path and query) and returns its answer;
    /// nil when the home gave none in time (or one larger than ``maxAnswerBytes``).
    func forward(uri: String, body: ByteBuffer, to home: NodeRegistration) async -> Response? {
        guard let target = HTTPTarget(url: home.signalingURL) else { return nil }
        do {
            let client = try HTTPPostClient(target: target, group: group, timeout: Self.timeout, maxResponseBytes: Self.maxAnswerBytes)
            let answer = try await client.post(Array(buffer: body), headers: [(ClusterRouting.tokenHeader, membership.relayToken)], path: uri)
            guard !answer.truncated else { return nil }
            return Response(
                status: HTTPResponse.Status(code: answer.status), headers: [.contentType: "application/json; charset=utf-8"],
                body: .init(byteBuffer: answer.body))
        } catch {
            logger.warning("Admin call not forwarded to the room's home", metadata: [LogKey.node: "\(home.nodeId)", LogKey.error: "\(error)"])
            return nil
        }
    }
}
