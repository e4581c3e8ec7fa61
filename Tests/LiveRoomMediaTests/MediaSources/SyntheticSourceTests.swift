import Foundation
import Testing
@testable import LiveRoomMedia

@Suite struct YUVColorTests {
    @Test func convertsPrimariesToBT601LimitedRange() {
        #expect(YUVColor(rgb: 0xFF0000) == YUVColor(y: 81, u: 90, v: 240))
        #expect(YUVColor(rgb: 0x00FF00) == YUVColor(y: 145, u: 54, v: 34))
        #expect(YUVColor(rgb: 0x0000FF) == YUVColor(y: 41, u: 240, v: 110))
        #expect(YUVColor(rgb: 0xFFFFFF) == YUVColor(y: 235, u: 128, v: 128))
        #expect(YUVColor(rgb: 0x000000) == YUVColor(y: 16, u: 128, v: 128))
    }
}

@Suite struct VideoFrameTests {
    @Test func rejectsPlanesOfTheWrongSize() {
        #expect(throws: MediaFormatError.self) {
            try VideoFrame(width: 4, height: 4, y: [UInt8](repeating: 0, count: 16), u: [0, 0, 0], v: [0, 0, 0, 0], pts: 0)
        }
        #expect(throws: Never.self) {
            // Odd sizes round the chroma planes up.
            try VideoFrame(width: 3, height: 3, y: [UInt8](repeating: 0, count: 9), u: [0, 0, 0, 0], v: [0, 0, 0, 0], pts: 0)
        }
    }

    @Test func fillRectClipsAtTheEdges() {
        var frame = VideoFrame(width: 8, height: 6, color: .black)
        frame.fillRect(x: 6, y: 4, width: 10, height: 10, color: .white)
        #expect(frame.pixel(x: 7, y: 5) == .white)
        #expect(frame.pixel(x: 5, y: 5).y == 16)
        #expect(frame.y.filter { $0 == 235 }.count == 4)
    }
}

@Suite struct TestCardSourceTests {
    let source = TestCardSource(width: 320, height: 240, fps: 15, label: "user-7")

    @Test func framesDifferBetweenIndexesAndRepeatForTheSameIndex() {
        let a = source.nextFrame(index: 0), b = source.nextFrame(index: 1), again = source.nextFrame(index: 1)
        #expect(a != b)
        #expect(b == again)
        #expect(a.pts == 0)
        #expect(b.pts == 6_000)
        #expect(source.boxPosition(index: 0) != source.boxPosition(index: 1))
        // The moving box is white where the bars are not.
        let box = source.boxPosition(index: 10)
        #expect(source.nextFrame(index: 10).pixel(x: box.x + 2, y: box.y + 2) == .white)
    }

    /// Every font pixel of the label and the counter is where the font says, and white.
    @Test func drawsTheLabelAndCounterWithTheBitmapFont() {
        let frame = source.nextFrame(index: 42)
        let scale = source.textScale
        func check(_ text: String, at origin: (x: Int, y: Int)) {
            for (i, character) in text.enumerated() {
                var set = 0
                for row in 0..<BitmapFont.glyphHeight {
                    for column in 0..<BitmapFont.glyphWidth {
                        let x = origin.x + i * (BitmapFont.glyphWidth + 1) * scale + column * scale + scale / 2
                        let y = origin.y + row * scale + scale / 2
                        let expected: UInt8 = BitmapFont.isSet(character, column: column, row: row) ? 235 : 16
                        if expected == 235 { set += 1 }
                        #expect(frame.pixel(x: x, y: y).y == expected, "\(character) pixel (\(column), \(row)) in \"\(text)\"")
                    }
                }
                if character != " " { #expect(set > 0, "\(character) should have pixels") }
            }
        }
        check("USER-7", at: source.labelOrigin)
        check("000042", at: source.counterOrigin)
        #expect(TestCardSource.counterText(index: 42) == "000042")
    }

    @Test func lowerCaseDrawsAsUpperCaseAndUnknownAsQuestionMark() {
        #expect(BitmapFont.rows(for: "a") == BitmapFont.rows(for: "A"))
        #expect(BitmapFont.rows(for: "é") == BitmapFont.rows(for: "?"))
        #expect(BitmapFont.rows(for: "0") != BitmapFont.rows(for: "8"))
    }

    @Test func barsUseTheBT601Colours() {
        let frame = source.nextFrame(index: 0)
        let barWidth = 320 / 7
        for (i, rgb) in TestCardSource.barColors.enumerated() {
            #expect(frame.pixel(x: i * barWidth + barWidth / 2, y: 120) == YUVColor(rgb: rgb), "bar \(i)")
        }
    }
}

@Suite struct ColorSourceTests {
    @Test func everyPixelHasTheColour() {
        let frame = ColorSource(rgb: 0xFF0000, width: 16, height: 10, fps: 10).nextFrame(index: 3)
        #expect(frame.pts == 27_000)
        #expect(Set(frame.y) == [81])
        #expect(Set(frame.u) == [90])
        #expect(Set(frame.v) == [240])
        #expect(frame.u.count == 8 * 5)
    }
}

@Suite struct ToneSourceTests {
    @Test func producesTwentyMillisecondFramesWithContinuousPhase() {
        let tone = ToneSource(frequency: 440, sampleRate: 48_000, channels: 2)
        let first = tone.nextFrame(index: 0), second = tone.nextFrame(index: 1)
        #expect(first.samplesPerChannel == 960)
        #expect(first.samples.count == 1920)
        #expect(second.pts == 960)
        #expect(first.channel(0) == first.channel(1))
        // The sample after the end of frame 0 is the first of frame 1.
        let step = 2 * Double.pi * 440 / 48_000
        let predicted = 0.3 * Double(Int16.max) * sin(step * 960)
        #expect(abs(Double(second.samples[0]) - predicted) <= 1)
        let mono = first.channel(0)
        #expect(TestSupport.goertzelPower(mono, frequency: 440, sampleRate: 48_000)
            > 100 * TestSupport.goertzelPower(mono, frequency: 1_000, sampleRate: 48_000))
    }

    /// One 20 ms frame of an f Hz tone holds f / 50 cycles, two sign changes each.
    @Test(arguments: [(50.0, 2), (440.0, 17.6), (1_000.0, 40), (8_000.0, 320)] as [(Double, Double)])
    func honoursTheFrequency(frequency: Double, expectedCrossings: Double) {
        let tone = ToneSource(frequency: frequency)
        for index in [0, 1, 7] {
            let mono = tone.nextFrame(index: index).channel(0)
            let crossings = zip(mono, mono.dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count
            #expect(abs(Double(crossings) - expectedCrossings) <= 1.5, "\(frequency) Hz frame \(index): \(crossings) zero crossings")
        }
    }
}
