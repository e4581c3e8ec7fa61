import Testing

@testable import LiveRoomPublishTasks

@Suite("Composing a mix: placeholders, automatic places, templates, audio")
struct MixLayoutEngineTests {
    let canvas = MixSize(width: 540, height: 960)
    let camera = MixSize(width: 540, height: 960)

    func anchor(_ id: String, room: String = "room1", video: Bool = true, audio: Bool = true, muted: Bool = false, size: MixSize? = MixSize(width: 540, height: 960)) -> MixAnchor {
        MixAnchor(user: MixUser(userId: id, roomId: room), hasVideo: video, hasAudio: audio, videoMuted: muted, videoSize: video ? size : nil)
    }

    func compose(_ config: StreamMixingConfig, _ anchors: [MixAnchor], excluding: Set<MixUser> = []) -> MixFrameLayout {
        MixLayoutEngine.compose(config: config, canvas: canvas, anchors: anchors, taskRoomId: "room1", excluding: excluding)
    }

    @Test func guideLayoutWithBothAnchorsPresent() throws {
        let config = try PublishTaskConfig.parseClient(request: json(guideMixRequest), caller: caller)
        let frame = compose(try #require(config.mixingConfig), [anchor("anchor"), anchor("guest")])
        #expect(frame.items.count == 2)
        #expect(frame.items[0].content == .video(
            user: MixUser(userId: "anchor", roomId: "room1"), streamType: .big,
            placement: VideoPlacement(source: MixRect(x: 0, y: 0, width: 540, height: 960), destination: MixRect(x: 0, y: 0, width: 540, height: 960))))
        // The guest's 135-pixel-wide rect is even-aligned to 400…534; the camera, a little taller
        // than 134×240, loses 2 columns each side.
        #expect(frame.items[1].rect == MixRect(x: 400, y: 250, width: 134, height: 240))
        #expect(frame.items[1].content == .video(
            user: MixUser(userId: "guest", roomId: "room1"), streamType: .big,
            placement: VideoPlacement(source: MixRect(x: 2, y: 0, width: 536, height: 960), destination: MixRect(x: 400, y: 250, width: 134, height: 240))))
        #expect(frame.audio == [AudioMixInput(user: MixUser(userId: "anchor", roomId: "room1")), AudioMixInput(user: MixUser(userId: "guest", roomId: "room1"))])
        #expect(frame.inputUsers.count == 2)
    }

    @Test func itemsAreSortedByZOrderWithWatermarksAboveTheirLayer() {
        let config = StreamMixingConfig(
            videoLayoutList: [
                VideoLayout(rect: MixRect(x: 0, y: 0, width: 200, height: 200), zOrder: 5, fixedVideoUser: MixUser(userId: "a")),
                VideoLayout(rect: MixRect(x: 0, y: 0, width: 540, height: 960), zOrder: 0, fixedVideoUser: MixUser(userId: "b")),
            ],
            watermarkList: [
                Watermark(watermarkUrl: "https://x/top.png", rect: MixRect(x: 10, y: 10, width: 50, height: 50), zOrder: 15),
                Watermark(watermarkUrl: "https://x/mid.png", rect: MixRect(x: 10, y: 10, width: 50, height: 50), zOrder: 5),
            ])
        let frame = compose(config, [anchor("a"), anchor("b")])
        #expect(frame.items.map(\.origin) == [.layout(1), .layout(0), .watermark(1), .watermark(0)])
        #expect(frame.items[3].content == .image(url: "https://x/top.png"))
    }

    @Test func placeholdersForAbsentMutedAndAudioOnlyUsers() {
        let layouts = [
            VideoLayout(rect: MixRect(x: 0, y: 0, width: 270, height: 480), zOrder: 0, backgroundColor: 0x112233, fixedVideoUser: MixUser(userId: "absent")),
            VideoLayout(rect: MixRect(x: 270, y: 0, width: 270, height: 480), zOrder: 1, placeHolderImage: "https://x/away.png", fixedVideoUser: MixUser(userId: "muted")),
            VideoLayout(rect: MixRect(x: 0, y: 480, width: 270, height: 480), zOrder: 2, backgroundColor: 0x445566, fixedVideoUser: MixUser(userId: "voice")),
            VideoLayout(rect: MixRect(x: 270, y: 480, width: 270, height: 480), zOrder: 3, fixedVideoUser: MixUser(userId: "starting")),
        ]
        let frame = compose(
            StreamMixingConfig(videoLayoutList: layouts),
            [anchor("muted", muted: true), anchor("voice", video: false), anchor("starting", size: nil)])
        #expect(frame.items.map(\.content) == [.color(0x112233), .image(url: "https://x/away.png"), .color(0x445566), .color(0)])
        #expect(frame.items.map(\.user?.userId) == ["absent", "muted", "voice", "starting"])
        // Placeholders are not inputs; audio still mixes the muted and audio-only anchors.
        #expect(frame.audio.map(\.user.userId) == ["muted", "voice", "starting"])
    }

    @Test func automaticPlacesTakeAnchorsInJoinOrderSkippingPlacedOnes() {
        let rect = { (index: Int) in MixRect(x: 0, y: index * 240, width: 270, height: 240) }
        let config = StreamMixingConfig(videoLayoutList: [
            VideoLayout(rect: rect(0), zOrder: 0, fixedVideoUser: MixUser(userId: "b")),
            VideoLayout(rect: rect(1), zOrder: 1),
            VideoLayout(rect: rect(2), zOrder: 2),
            VideoLayout(rect: rect(3), zOrder: 3),
        ])
        let frame = compose(config, [anchor("a"), anchor("b"), anchor("c")])
        #expect(frame.items.map(\.user?.userId) == ["b", "a", "c"])
        #expect(frame.items.map(\.origin) == [.layout(0), .layout(1), .layout(2)])

        // Without pureAudioHoldsPlace, an audio-only anchor is skipped by automatic places.
        var strict = config
        strict.pureAudioHoldsPlace = false
        let skipped = compose(strict, [anchor("a", video: false), anchor("b"), anchor("c")])
        #expect(skipped.items.map(\.user?.userId) == ["b", "c"])
        let held = compose(config, [anchor("a", video: false), anchor("b"), anchor("c")])
        #expect(held.items.map(\.user?.userId) == ["b", "a", "c"])
        #expect(held.items[1].content == .color(0))
    }

    @Test func usersOfOtherRoomsAndTheRobot() {
        let config = StreamMixingConfig(videoLayoutList: [
            VideoLayout(rect: MixRect(x: 0, y: 0, width: 540, height: 480), zOrder: 0, fixedVideoUser: MixUser(userId: "host")),
            VideoLayout(rect: MixRect(x: 0, y: 480, width: 540, height: 480), zOrder: 1, fixedVideoUser: MixUser(userId: "host", roomId: "room2")),
        ])
        let frame = compose(config, [anchor("host"), anchor("host", room: "room2"), anchor("robot")], excluding: [MixUser(userId: "robot")])
        guard case .video(let first, _, _) = frame.items[0].content, case .video(let second, _, _) = frame.items[1].content else {
            Issue.record("expected two videos, got \(frame.items)")
            return
        }
        #expect(first == MixUser(userId: "host", roomId: "room1"))
        #expect(second == MixUser(userId: "host", roomId: "room2"))
        #expect(!frame.audio.contains { $0.user.userId == "robot" })
        #expect(frame.audio.count == 2)
    }

    @Test func fitPicturesGetALetterboxColour() {
        let config = StreamMixingConfig(videoLayoutList: [
            VideoLayout(rect: MixRect(x: 0, y: 0, width: 270, height: 240), zOrder: 0, fillMode: .fit, backgroundColor: 0x222222, fixedVideoUser: MixUser(userId: "a")),
            VideoLayout(rect: MixRect(x: 270, y: 0, width: 270, height: 240), zOrder: 1, fillMode: .fill, backgroundColor: 0x222222, fixedVideoUser: MixUser(userId: "b")),
        ])
        let frame = compose(config, [anchor("a"), anchor("b")])
        #expect(frame.items[0].backgroundColor == 0x222222)
        #expect(frame.items[0].content == .video(
            user: MixUser(userId: "a", roomId: "room1"), streamType: .big,
            placement: VideoPlacement(source: MixRect(x: 0, y: 0, width: 540, height: 960), destination: MixRect(x: 68, y: 0, width: 134, height: 240))))
        #expect(frame.items[1].backgroundColor == nil)
    }

    @Test(arguments: 1...16)
    func gridTemplateForEveryCount(count: Int) {
        let anchors = (0..<count).map { anchor("u\($0)") }
        let frame = compose(StreamMixingConfig(template: .grid), anchors)
        #expect(frame.items.count == count)
        #expect(frame.items.map(\.user?.userId) == anchors.map(\.user.userId))
        #expect(frame.items.map(\.rect) == TemplateGeometry.grid(canvas: canvas, count: count))
        for item in frame.items {
            guard case .video(_, _, let placement) = item.content else {
                Issue.record("expected video in \(item)")
                continue
            }
            #expect(placement.destination.isInside(canvas) && placement.destination.isEvenAligned)
            #expect(placement.source.isEvenAligned)
        }
        #expect(frame.audio.count == count)
    }

    @Test func templatesCapAtSixteenPictures() {
        let frame = compose(StreamMixingConfig(template: .float), (0..<20).map { anchor("u\($0)") })
        #expect(frame.items.count == 16)
        #expect(frame.inputUsers.count == 16)
        #expect(frame.audio.map(\.user.userId) == (0..<16).map { "u\($0)" })
    }

    @Test func floatAndScreenShareMainUser() {
        var config = StreamMixingConfig(template: .float, templateMainUser: MixUser(userId: "b"))
        let float = compose(config, [anchor("a"), anchor("b"), anchor("c")])
        #expect(float.items.map(\.user?.userId) == ["b", "a", "c"])
        #expect(float.items[0].rect == MixRect(x: 0, y: 0, width: 540, height: 960))

        config.template = .screenShare
        config.templateMainStreamType = .sub
        var sharing = anchor("b")
        sharing.subStreamSize = MixSize(width: 1920, height: 1080)
        let share = compose(config, [anchor("a"), sharing])
        guard case .video(let user, let streamType, let placement) = share.items[0].content else {
            Issue.record("expected the shared screen, got \(share.items[0])")
            return
        }
        #expect(user.userId == "b" && streamType == .sub)
        // The screen fits the 432×960 main area: 432×242 (rounded to even), centred.
        #expect(placement.destination == MixRect(x: 0, y: 358, width: 432, height: 242))
        #expect(share.items[1].user?.userId == "a")
    }

    @Test func templateWithoutAnchorsDrawsOnlyTheBackground() {
        let frame = compose(StreamMixingConfig(backgroundColor: 0x00FF00, backgroundImage: "https://x/bg.png", template: .grid), [])
        #expect(frame.items.isEmpty && frame.audio.isEmpty)
        #expect(frame.backgroundColor == 0x00FF00)
        #expect(frame.backgroundImage == "https://x/bg.png")
    }

    @Test func audioMixDedupesFiltersAndKeepsTheFirstVolume() {
        let config = StreamMixingConfig(
            audioMixUserList: [
                AudioMixUser(user: MixUser(userId: "b"), volume: 30),
                AudioMixUser(user: MixUser(userId: "a", roomId: "room1"), volume: 80),
                AudioMixUser(user: MixUser(userId: "b", roomId: "room1"), volume: 90),
                AudioMixUser(user: MixUser(userId: "gone")),
                AudioMixUser(user: MixUser(userId: "silent")),
                AudioMixUser(user: MixUser(userId: "blocked")),
                AudioMixUser(user: MixUser(userId: "loud"), volume: 150),
            ],
            audioExcludeUserList: [MixUser(userId: "blocked")])
        let frame = compose(config, [anchor("a"), anchor("b"), anchor("silent", audio: false), anchor("blocked"), anchor("loud"), anchor("other")])
        #expect(frame.audio == [
            AudioMixInput(user: MixUser(userId: "b", roomId: "room1"), volume: 30),
            AudioMixInput(user: MixUser(userId: "a", roomId: "room1"), volume: 80),
            AudioMixInput(user: MixUser(userId: "loud", roomId: "room1"), volume: 100),
        ])
        let everyone = compose(StreamMixingConfig(), [anchor("a"), anchor("b", audio: false), anchor("c", video: false), anchor("a")])
        #expect(everyone.audio.map(\.user.userId) == ["a", "c"])
    }

    @Test func audioOnlyInputsStopAtSixteen() {
        let layouts = (0..<15).map { VideoLayout(rect: MixRect(x: 0, y: 0, width: 100, height: 100), zOrder: $0, fixedVideoUser: MixUser(userId: "v\($0)")) }
        let anchors = (0..<15).map { anchor("v\($0)") } + (0..<3).map { anchor("voice\($0)", video: false) }
        let frame = compose(StreamMixingConfig(videoLayoutList: layouts), anchors)
        #expect(frame.audio.count == 16)
        #expect(frame.audio.last?.user.userId == "voice0")
        #expect(frame.inputUsers.count == 16)
    }

    @Test func audioOnlyCanvas() {
        let frame = MixLayoutEngine.compose(
            config: StreamMixingConfig(template: .grid, watermarkList: []), canvas: MixSize(width: 0, height: 0),
            anchors: [anchor("a"), anchor("b")], taskRoomId: "room1")
        #expect(frame.items.isEmpty)
        #expect(frame.audio.count == 2)
    }
}
