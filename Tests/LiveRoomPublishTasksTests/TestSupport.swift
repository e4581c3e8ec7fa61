import LiveRoomProtocol
import Testing

@testable import LiveRoomPublishTasks

/// Parses JSON text in a test.
func json(_ text: String) throws -> JSONValue {
    try JSONValue.parse(text)
}

/// Expects `body` to throw a ``LiveRoomError`` with `code` whose message contains every one of `fragments`.
func expectError(
    _ code: Int, _ fragments: String..., sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("expected error \(code), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as LiveRoomError {
        #expect(error.code == code, "got \(error)", sourceLocation: sourceLocation)
        for fragment in fragments {
            #expect(error.message.contains(fragment), "message \"\(error.message)\" lacks \"\(fragment)\"", sourceLocation: sourceLocation)
        }
    } catch {
        Issue.record("expected LiveRoomError \(code), got \(error)", sourceLocation: sourceLocation)
    }
}

let caller = MixUser(userId: "anchor", roomId: "room1")

/// The mixing request of TRTC's e-commerce guide: a 540×960 canvas, the anchor full screen
/// and one co-host at (400, 250) 135×240.
let guideMixRequest = """
    {
      "target": {
        "mode": 3,
        "cdnUrlList": [{"rtmpUrl": "rtmp://push.example.com/live/shop42?txSecret=9f2c&txTime=6650C0A0", "isInternalLine": true}]
      },
      "encoderParam": {
        "audioEncodedSampleRate": 48000, "audioEncodedChannelNum": 1, "audioEncodedKbps": 50, "audioEncodedCodecType": 0,
        "videoEncodedWidth": 540, "videoEncodedHeight": 960, "videoEncodedFPS": 15, "videoEncodedGOP": 2, "videoEncodedKbps": 1300
      },
      "mixingConfig": {
        "backgroundColor": 0,
        "videoLayoutList": [
          {"rect": {"left": 0, "top": 0, "right": 540, "bottom": 960}, "zOrder": 0, "fillMode": 0,
           "fixedVideoUser": {"userId": "anchor", "strRoomId": "room1"}, "fixedVideoStreamType": 0},
          {"rect": {"left": 400, "top": 250, "right": 535, "bottom": 490}, "zOrder": 1, "fillMode": 0,
           "fixedVideoUser": {"userId": "guest", "strRoomId": "room1"}, "fixedVideoStreamType": 0}
        ],
        "audioMixUserList": [{"userId": "anchor", "strRoomId": "room1"}, {"userId": "guest", "strRoomId": "room1"}]
      }
    }
    """

/// A valid mixing task on a 540×960 canvas with `layouts` and `urls`.
func mixConfig(
    layouts: [VideoLayout] = [], audio: [AudioMixUser] = [], urls: [String] = ["rtmp://cdn.example.com/live/a"],
    width: Int = 540, height: Int = 960, template: LayoutTemplate = .custom
) -> PublishTaskConfig {
    PublishTaskConfig(
        target: PublishTarget(mode: .mixStreamToCdn, cdnUrlList: urls.map { PublishCdnUrl(rtmpUrl: $0) }),
        encoderParam: StreamEncoderParam(videoEncodedWidth: width, videoEncodedHeight: height, videoEncodedFPS: 15, videoEncodedGOP: 2, videoEncodedKbps: 1300),
        mixingConfig: StreamMixingConfig(template: template, videoLayoutList: layouts, audioMixUserList: audio))
}
