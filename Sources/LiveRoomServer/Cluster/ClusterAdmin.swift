import Foundation
import LiveRoomCluster
import LiveRoomProtocol

/// `GET /v1/cluster/nodes`: every node, alive or dead, with its load, and each room's home.
enum ClusterAdmin {
    static func describe(_ cluster: ClusterMembership?, hub: RoomHub) async -> JSONValue {
        let requestId = JSONValue.string(UUID().uuidString.lowercased())
        guard let cluster else {
            return ["Response": ["Error": ["Code": "FailedOperation.ClusterModeOff", "Message": "this server runs alone: it was started without --cluster-db"], "RequestId": requestId]]
        }
        do {
            let (view, homes) = try await cluster.describe()
            return ["Response": .object(body(view: view, homes: homes, nodeId: cluster.nodeId).merging(["RequestId": requestId]) { $1 })]
        } catch {
            return ["Response": ["Error": ["Code": "InternalError.ClusterDatabase", "Message": .string("the cluster database cannot be read: \(error)")], "RequestId": requestId]]
        }
    }

    /// The answer's fields (pure): `NodeId` (the node answering), `Nodes` and `Rooms`.
    static func body(view: ClusterView, homes: [RoomHome], nodeId: String) -> [String: JSONValue] {
        let nodes: [JSONValue] = view.nodes.map { node in
            let alive = view.isAlive(node)
            return [
                "NodeId": .string(node.nodeId),
                "Alive": .bool(alive),
                "SignalingUrl": .string(node.registration.signalingURL),
                "MediaAddresses": .array(node.registration.mediaAddresses.map { .string($0) }),
                "LastHeartbeat": .number(Double(node.lastHeartbeatMs)),
                "MillisecondsSinceHeartbeat": .number(Double(max(0, view.nowMs - node.lastHeartbeatMs))),
                "HomedRooms": .number(Double(node.homedRooms)),
                "Load": [
                    "Rooms": .number(Double(node.load.rooms)), "Peers": .number(Double(node.load.peers)),
                    "Tasks": .number(Double(node.load.tasks)), "CpuPercent": .number((node.load.cpuPercent * 10).rounded() / 10),
                ],
            ]
        }
        let rooms: [JSONValue] = homes.map { home in
            ["RoomId": RoomID(key: home.roomKey).json, "HomeNode": .string(home.nodeId)]
        }
        return ["NodeId": .string(nodeId), "Nodes": .array(nodes), "Rooms": .array(rooms)]
    }
}
