import Foundation
import HTTPTypes
import Hummingbird
import LiveRoomAdmin
import LiveRoomCluster
import LiveRoomCommerce
import LiveRoomPostgres
import LiveRoomProtocol
import Logging
import NIOCore
import NIOHTTP1

/// Cluster mode: requests about a room that lives on another node are carried out there, by
/// the room's home node, where the room lives (its members, its tasks, its media, its clients,
/// who hear of a product changed, an order cancelled, a group message):
///
/// - admin calls about a room's live state, and the IM group message;
/// - WHIP and WHEP: the session is made on the home node (its media goes there), and the
///   resource it returns names that node (`<node>~<session>`), so a DELETE or PATCH reaching
///   any node goes there too.
///
/// The node a request reached forwards it there, path, query, credentials (which the home
/// checks again) and body unchanged, and answers with the home's answer. A forwarded request
/// carries the relay token and is never forwarded again. Calls on stored state only (orders,
/// history, battles) are answered where they arrive: PostgreSQL holds them for every node.
struct ClusterForwarding: Sendable {
    let membership: ClusterMembership
    let orders: any OrderStore
    let sdkAppId: UInt64
    let logger: Logger

    /// How long the home node has to answer a forwarded request.
    static let timeout: Duration = .seconds(10)
    /// The largest answer forwarded back.
    static let maxAnswerBytes = 4 << 20

    var nodeId: String { membership.nodeId }

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
        case .updatePublishCdnStream(let task):
            return await node(runningTask: task.taskId)
        case .stopPublishCdnStream(let taskId):
            return await node(runningTask: taskId)
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

    /// The beginning of the task ids a node gives (`n1~…`): they name the node running the task.
    static func taskIdPrefix(node: String) -> String { "\(node)~" }

    /// The live node other than this one that runs task `taskId`, by the node its id names; nil
    /// to carry the call out here (this node's task, or a node that is not alive: not found).
    func node(runningTask taskId: String) async -> NodeRegistration? {
        guard let tilde = taskId.firstIndex(of: "~") else { return nil }
        let node = String(taskId[..<tilde])
        guard node != nodeId, ClusterRules.isValidNodeId(node) else { return nil }
        return await membership.liveNode(node)
    }

    /// The home node of the room an IM `send_group_msg` names; nil to carry it out here.
    func home(ofGroupMessage body: String) async -> NodeRegistration? {
        guard let message = try? GroupMessage(body) else { return nil }
        return await membership.liveHome(ofRoom: RoomID.string(message.groupId).key)
    }

    /// The live node other than this one where the room (its key) lives; nil to serve it here.
    func home(ofRoom roomKey: String) async -> NodeRegistration? {
        await membership.liveHome(ofRoom: roomKey)
    }

    /// Node `id`, when it is alive.
    func liveNode(_ id: String) async -> NodeRegistration? {
        await membership.liveNode(id)
    }

    /// Sends a request as it came (`uri`: path and query) to `node` with `headers` and `body`;
    /// the answer, or nil when the node gave none in time (or one larger than ``maxAnswerBytes``).
    func forward(_ method: HTTPMethod, uri: String, body: ByteBuffer, headers: [(String, String)], to node: NodeRegistration) async -> HTTPPostClient.Answer? {
        guard let target = HTTPTarget(url: node.signalingURL) else { return nil }
        do {
            let client = HTTPPostClient(target: target, timeout: Self.timeout, maxResponseBytes: Self.maxAnswerBytes)
            let answer = try await client.send(
                method, Array(buffer: body), headers: headers + [(ClusterRouting.tokenHeader, membership.relayToken)], path: uri)
            return answer.truncated ? nil : answer
        } catch {
            logger.warning("Request not forwarded to the room's home", metadata: [LogKey.node: "\(node.nodeId)", LogKey.error: "\(error)"])
            return nil
        }
    }

    /// An admin call forwarded to `home`: its JSON answer, or nil.
    func forwardCall(uri: String, body: ByteBuffer, to home: NodeRegistration) async -> Response? {
        guard let answer = await forward(.POST, uri: uri, body: body, headers: [], to: home) else { return nil }
        return Response(
            status: HTTPResponse.Status(code: answer.status), headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: answer.body))
    }

    /// A WHIP/WHEP resource id that names the node holding the session: `<node>~<session>`.
    static func taggedResource(_ session: Substring, node: String) -> String { "\(node)~\(session)" }

    /// The node and session of a tagged resource id; nil for a plain one.
    static func untag(_ resource: String) -> (node: String, session: String)? {
        guard let tilde = resource.firstIndex(of: "~") else { return nil }
        let node = String(resource[..<tilde]), session = String(resource[resource.index(after: tilde)...])
        guard ClusterRules.isValidNodeId(node), !session.isEmpty, session.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return (node, session)
    }
}
