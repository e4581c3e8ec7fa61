import LiveRoomCluster
import LiveRoomCore
import LiveRoomProtocol
import LiveRoomPublishTasks
import LiveRoomSFU
import LiveRoomTaskRunner
import LiveRoomWebhooks
import Logging

/// The publish media stream tasks of this node's rooms, beside the rooms and the hub: the task
/// machine, the runners it runs here and, in cluster mode, on other nodes (PublishTasks.swift,
/// TaskHosting.swift). The rooms' publishers reach it from the hub as they change; a room
/// task's robot enters its room through the hub; answers go to the connections' outboxes.
actor RoomTasks {
    var tasks: PublishTasksStateMachine
    /// The runners of the tasks: here, and in cluster mode on other nodes.
    var runners = TaskRunners()
    let services: HubServices
    let logger: Logger
    /// The rooms' settings, for a robot's UserSig and PrivateMapKey.
    let configuration: RoomsStateMachine.Configuration
    /// Where robots enter their rooms; set with the media port.
    private(set) weak var hub: RoomHub?
    private(set) var media: (any MediaPort)?
    private(set) var nodes: any OtherNodes = SingleNode()

    /// The tasks' settings' task id prefix is replaced by a random one per server run, so
    /// task ids stay unique across restarts; in cluster mode it begins with `nodeId` and `~`,
    /// so that an admin call naming the task reaches the node running it through any node.
    init(services: HubServices, logger: Logger) {
        var configuration = services.settings.tasks
        configuration.taskIdPrefix = (services.settings.nodeId.map { ClusterForwarding.taskIdPrefix(node: $0) } ?? "") + String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 36) + "-"
        tasks = PublishTasksStateMachine(configuration: configuration)
        self.configuration = services.settings.rooms
        self.services = services
        self.logger = logger
    }

    var webhooks: WebhookService? { services.webhooks }
    var egress: EgressResolver { services.settings.egress }
    var imageDirectory: String? { services.settings.imageDirectory }

    /// The hub robots enter through, and the media port runners and taps work with.
    func attach(_ hub: RoomHub, media: any MediaPort) {
        self.hub = hub
        self.media = media
    }

    /// The other nodes, where tasks over this node's budget may run.
    func attach(_ nodes: any OtherNodes) {
        self.nodes = nodes
    }

    func send(_ event: ServerEvent, to session: SessionID) {
        services.outboxes.send(event, to: [session])
    }
}

/// The runners of publish tasks (PublishTasks.swift, TaskHosting.swift).
struct TaskRunners {
    /// The runner of each task of this node that runs here.
    var local: [String: PublishTaskRunner] = [:]
    /// Cluster mode, on a room's home: tasks whose runners other nodes run, with their node,
    /// and those whose runner is yet to be started there.
    var hostedElsewhere: [String: String] = [:]
    var pendingHostedStarts: [(taskId: String, host: String)] = []
    /// Cluster mode, on a task's host: runners this node runs for tasks of rooms on other nodes.
    var hostedHere: [String: HostedTask] = [:]
    var nextHostedTap: SFURouter.TapID = 1 << 44
}
