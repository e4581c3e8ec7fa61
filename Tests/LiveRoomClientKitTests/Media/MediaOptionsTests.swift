import LiveRoomProtocol
import LiveRoomMedia
import Testing

@testable import LiveRoomClientKit

@Suite struct MediaOptionsTests {
    @Test func muteCommandsParse() throws {
        #expect(try ClientCommand.parse("mute-video on") == .request(.room(.muteLocalVideo(true))))
        #expect(try ClientCommand.parse("mute-video off") == .request(.room(.muteLocalVideo(false))))
        #expect(try ClientCommand.parse(" mute-audio on ") == .request(.room(.muteLocalAudio(true))))
        #expect(try ClientCommand.parse("mute-audio off") == .request(.room(.muteLocalAudio(false))))
    }

    @Test(arguments: ["mute-video", "mute-video yes", "mute-audio on off", "mute-audio"])
    func badMuteCommands(line: String) {
        #expect(throws: LiveRoomError.self) { try ClientCommand.parse(line) }
    }

    @Test func publishSources() throws {
        #expect(try PublishSource(parsing: "testsrc") == .testCard)
        #expect(try PublishSource(parsing: "color:FF8000") == .color(0xFF8000))
        #expect(try PublishSource(parsing: "color:#00ff00") == .color(0x00FF00))
        #expect(try PublishSource(parsing: "file:/tmp/a b.mp4") == .file(path: "/tmp/a b.mp4"))
        for bad in ["", "camera", "color:", "color:12345", "color:GGGGGG", "file:"] {
            #expect(throws: MediaOptionError.self) { try PublishSource(parsing: bad) }
        }
    }

    @Test func codecsAndResolutions() throws {
        #expect(try MediaOptions.parseVideoCodec("vp8") == .vp8)
        #expect(try MediaOptions.parseVideoCodec("H264") == .h264)
        #expect(throws: MediaOptionError.self) { try MediaOptions.parseVideoCodec("av1") }
        #expect(try MediaOptions.parseResolution("540x960") == (540, 960))
        #expect(try MediaOptions.parseResolution("1280X720") == (1280, 720))
        for bad in ["540", "540x", "x960", "541x960", "8x8", "99999x2", "axb"] {
            #expect(throws: MediaOptionError.self) { try MediaOptions.parseResolution(bad) }
        }
    }

    @Test func defaultsAndValidation() throws {
        let defaults = MediaOptions()
        #expect(defaults.videoCodec == .vp8 && defaults.width == 540 && defaults.height == 960 && defaults.fps == 15 && defaults.bitrateKbps == 1300)
        try defaults.validate()
        #expect(throws: MediaOptionError.self) { try MediaOptions(fps: 0).validate() }
        #expect(throws: MediaOptionError.self) { try MediaOptions(bitrateKbps: 1).validate() }
    }
}
