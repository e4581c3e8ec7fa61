import Testing

@testable import LiveRoomPublishTasks

@Suite("The PK template: own room first, then linked rooms, in full-height columns; every anchor heard once")
struct PKTemplateTests {
    static let landscape = MixSize(width: 1280, height: 720)
    static let portrait = MixSize(width: 540, height: 960)

    /// An anchor of `room`; "room1" is the task's room.
    func anchor(_ id: String, room: String = "room1", video: Bool = true, audio: Bool = true, size: MixSize = PKTemplateTests.portrait) -> MixAnchor {
        MixAnchor(user: MixUser(userId: id, roomId: room), hasVideo: video, hasAudio: audio, videoSize: video ? size : nil)
    }

    func compose(_ anchors: [MixAnchor], config: StreamMixingConfig = StreamMixingConfig(template: .pk), canvas: MixSize = PKTemplateTests.landscape) -> MixFrameLayout {
        MixLayoutEngine.compose(config: config, canvas: canvas, anchors: anchors, taskRoomId: "room1")
    }

    func videoUsers(_ frame: MixFrameLayout) -> [String] {
        frame.items.compactMap { item -> String? in
            if case .video(let user, _, _) = item.content { return user.description }
            return nil
        }
    }

    @Test func ownRoomAnchorsComeFirstWhateverTheInputOrder() {
        // Remote anchors given first and interleaved; "b" has no room id, so is in the task's room.
        let anchors = [anchor("p1", room: "room2"), anchor("a"), anchor("q1", room: "room3"), anchor("b", room: ""), anchor("p2", room: "room2")]
        let frame = compose(anchors)
        #expect(videoUsers(frame) == ["a@room1", "b@room1", "p1@room2", "q1@room3", "p2@room2"])
        #expect(frame.items.map(\.rect) == TemplateGeometry.columns(canvas: Self.landscape, count: 5))
        #expect(
            MixLayoutEngine.ownRoomFirst(anchors, taskRoomId: "room1").map(\.user.userId) == ["a", "b", "p1", "q1", "p2"])
        // The same user id in two rooms is two anchors.
        let namesakes = compose([anchor("host", room: "room2"), anchor("host")])
        #expect(videoUsers(namesakes) == ["host@room1", "host@room2"])
        #expect(namesakes.audio.map(\.user) == [MixUser(userId: "host", roomId: "room1"), MixUser(userId: "host", roomId: "room2")])
    }

    @Test(arguments: [MixSize(width: 1280, height: 720), MixSize(width: 720, height: 1280)])
    func oneTwoThreeColumnsEachPictureCroppedToFill(canvas: MixSize) {
        let anchors = [anchor("a"), anchor("p", room: "room2", size: Self.landscape), anchor("q", room: "room3")]
        for count in 1...3 {
            let frame = compose(Array(anchors.prefix(count)), canvas: canvas)
            let columns = TemplateGeometry.columns(canvas: canvas, count: count)
            #expect(frame.items.map(\.rect) == columns)
            #expect(columns.allSatisfy { $0.height == canvas.height && $0.width == canvas.width / count })
            for (item, source) in zip(frame.items, anchors) {
                let expected = VideoPlacement.place(source: source.videoSize!, in: item.rect, mode: .fill)
                #expect(item.content == .video(user: source.user, streamType: .big, placement: expected))
                // Cropped, not letterboxed: the picture covers its whole column.
                #expect(expected.destination == item.rect)
                #expect(item.backgroundColor == nil)
            }
        }
        // A portrait anchor in a tall column of the landscape canvas loses only a little of its top and bottom.
        let tall = compose([anchor("a"), anchor("p", room: "room2")])
        guard case .video(_, _, let placement) = tall.items[0].content else {
            Issue.record("expected video, got \(tall.items[0])")
            return
        }
        #expect(placement.source.width == 540 && placement.source.height < 960 && placement.source.height > 560)
    }

    @Test func renderModeOverridesTheCrop() {
        let frame = compose([anchor("a", size: Self.landscape), anchor("p", room: "room2")], config: StreamMixingConfig(template: .pk, templateFillMode: .fit))
        guard case .video(_, _, let placement) = frame.items[0].content else {
            Issue.record("expected video, got \(frame.items[0])")
            return
        }
        #expect(placement.destination.width == 640 && placement.destination.height < 720)
    }

    @Test func audioOnlyAnchorsTakeAColumnOnlyWhenTheyHoldPlace() {
        let anchors = [anchor("a"), anchor("voice", video: false), anchor("p", room: "room2"), anchor("pvoice", room: "room2", video: false)]
        let skipped = compose(anchors, config: StreamMixingConfig(template: .pk, pureAudioHoldsPlace: false))
        #expect(skipped.items.map(\.user?.description) == ["a@room1", "p@room2"])
        #expect(skipped.items.map(\.rect) == TemplateGeometry.columns(canvas: Self.landscape, count: 2))
        // Left out of the picture, still heard.
        #expect(skipped.audio.map(\.user.description) == ["a@room1", "voice@room1", "p@room2", "pvoice@room2"])

        let held = compose(anchors, config: StreamMixingConfig(template: .pk, pureAudioHoldsPlace: true))
        #expect(held.items.map(\.user?.description) == ["a@room1", "voice@room1", "p@room2", "pvoice@room2"])
        #expect(held.items.map(\.rect) == TemplateGeometry.columns(canvas: Self.landscape, count: 4))
        #expect(held.items[1].content == .color(0))
        #expect(held.items[3].content == .color(0))
        #expect(held.audio == skipped.audio)
    }

    @Test func sixteenColumnsAtMostOwnRoomKeptFirst() {
        let remote = (0..<8).map { anchor("p\($0)", room: "room2") }
        let own = (0..<10).map { anchor("a\($0)") }
        let frame = compose(remote + own)
        #expect(frame.items.count == 16)
        #expect(videoUsers(frame) == own.map(\.user.description) + remote.prefix(6).map(\.user.description))
        #expect(frame.inputUsers.count == StreamMixingConfig.maxInputs)
    }

    @Test func theMainUserDoesNotReorderColumns() {
        let config = StreamMixingConfig(template: .pk, templateMainUser: MixUser(userId: "p", roomId: "room2"), templateMainStreamType: .sub)
        let frame = compose([anchor("a"), anchor("p", room: "room2")], config: config)
        #expect(videoUsers(frame) == ["a@room1", "p@room2"])
        #expect(frame.items.allSatisfy {
            if case .video(_, let streamType, _) = $0.content { return streamType == .big }
            return false
        })
    }

    @Test func pkMixesTheRemoteAnchorsAudioOnce() {
        let anchors = [anchor("a"), anchor("p", room: "room2"), anchor("b", room: "")]
        let expected = [
            AudioMixInput(user: MixUser(userId: "a", roomId: "room1")), AudioMixInput(user: MixUser(userId: "b", roomId: "room1")),
            AudioMixInput(user: MixUser(userId: "p", roomId: "room2")),
        ]
        #expect(compose(anchors).audio == expected)
        // The task's runner mixes audio from a compose without a canvas: the same inputs.
        #expect(compose(anchors, canvas: MixSize(width: 0, height: 0)).audio == expected)
        // A remote anchor who sends no audio is seen, not heard.
        let silent = compose([anchor("a"), anchor("p", room: "room2", audio: false)])
        #expect(videoUsers(silent) == ["a@room1", "p@room2"])
        #expect(silent.audio.map(\.user.description) == ["a@room1"])
    }

    @Test func anAnchorGivenTwiceIsDrawnAndMixedOnce() {
        let anchors = [
            anchor("a"), anchor("p", room: "room2"), anchor("a", room: ""), anchor("p", room: "room2"), anchor("a"),
        ]
        let frame = compose(anchors)
        #expect(videoUsers(frame) == ["a@room1", "p@room2"])
        #expect(frame.items.map(\.rect) == TemplateGeometry.columns(canvas: Self.landscape, count: 2))
        #expect(frame.audio.map(\.user.description) == ["a@room1", "p@room2"])
    }

    /// Whatever the template, each anchor sending audio (own room or another, drawn or not,
    /// given once or twice) is one audio input.
    @Test(arguments: [LayoutTemplate.float, .screenShare, .grid, .custom, .pk], [false, true])
    func everyTemplateMixesEveryAnchorsAudioExactlyOnce(template: LayoutTemplate, holdsPlace: Bool) {
        let anchors = [
            anchor("p", room: "room2"), anchor("a"), anchor("voice", video: false), anchor("q", room: "room3", video: false),
            anchor("b", room: ""), anchor("p", room: "room2"), anchor("a", room: ""), anchor("mute", audio: false),
        ]
        let layouts = template == .custom ? [VideoLayout(rect: MixRect(x: 0, y: 0, width: 640, height: 720), zOrder: 0)] : []
        let config = StreamMixingConfig(template: template, pureAudioHoldsPlace: holdsPlace, videoLayoutList: layouts)
        let expected: Set<MixUser> = [
            MixUser(userId: "p", roomId: "room2"), MixUser(userId: "a", roomId: "room1"), MixUser(userId: "voice", roomId: "room1"),
            MixUser(userId: "q", roomId: "room3"), MixUser(userId: "b", roomId: "room1"),
        ]
        for canvas in [Self.landscape, MixSize(width: 0, height: 0)] {
            let audio = compose(anchors, config: config, canvas: canvas).audio
            #expect(audio.count == expected.count, "\(template.name) \(canvas): \(audio)")
            #expect(Set(audio.map(\.user)) == expected, "\(template.name) \(canvas)")
            #expect(audio.allSatisfy { $0.volume == 100 })
        }
    }
}
