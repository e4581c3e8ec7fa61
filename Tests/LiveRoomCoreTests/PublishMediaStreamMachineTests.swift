import Testing

@testable import LiveRoomCore

/// The publish media stream requests belong to the server's publish task service: the rooms
/// machine takes no action on them.
@Suite struct PublishMediaStreamMachineTests {
    @Test func roomsMachineLeavesPublishTasksToTheService() {
        var h = Harness()
        h.enter("host", role: .anchor)
        h.enter("fan")
        let requests: [SignalingRequest] = [
            .startPublishMediaStream(target: ["mode": 1], encoderParam: nil, mixingConfig: nil),
            .updatePublishMediaStream(taskId: "t1", target: nil, encoderParam: ["videoEncodedKbps": 900], mixingConfig: nil),
            .stopPublishMediaStream(taskId: ""),
        ]
        for request in requests {
            let fromHost = h.send(request, from: "host")
            let fromFan = h.send(request, from: "fan")
            #expect(fromHost.isEmpty, "\(request.type) from an anchor")
            #expect(fromFan.isEmpty, "\(request.type) from an audience member")
        }
        #expect(h.machine.rooms["r1"]?.members.keys.sorted() == ["fan", "host"])
    }
}
