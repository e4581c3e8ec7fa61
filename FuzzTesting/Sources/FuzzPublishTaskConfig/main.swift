import FuzzSupport
import LiveRoomPublishTasks
import LiveRoomProtocol

/// Any bytes are a task config or a LiveRoomError, for the client and the admin shapes; a
/// config that parses lays out without a crash for a few anchors, and its rects stay on the canvas.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let value = try? JSONValue.parse(text) else { return 0 }
    var configs: [PublishTaskConfig] = []
    if let config = try? PublishTaskConfig.parseClient(request: value, caller: MixUser(userId: "caller", roomId: "room")) { configs.append(config) }
    if let (_, config) = try? AdminPublishCdnStreamRequest.parseStart(value) { configs.append(config) }
    let anchors = (0..<5).map { MixAnchor(user: MixUser(userId: "u\($0)", roomId: "room"), videoSize: MixSize(width: 320 + 2 * $0, height: 240)) }
    for config in configs where config.target.mode.isMixing {
        let canvas = config.encoderParam?.canvas ?? MixSize(width: 0, height: 0)
        let layout = MixLayoutEngine.compose(config: config.effectiveMixingConfig, canvas: canvas, anchors: anchors, taskRoomId: "room")
        for item in layout.items {
            precondition(canvas.isEmpty || item.rect.isEmpty || item.rect.isInside(canvas), "\(item.rect) outside \(canvas)")
        }
    }
    return 0
}

@_cdecl("FuzzPublishTaskConfig_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv, fuzzOne)
}
