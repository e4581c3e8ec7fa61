import Testing

@testable import LiveRoomPublishTasks

@Suite("Template geometry and fill/fit placement")
struct LayoutGeometryTests {
    static let canvases = [MixSize(width: 540, height: 960), MixSize(width: 1280, height: 720), MixSize(width: 720, height: 1280), MixSize(width: 1920, height: 1080), MixSize(width: 640, height: 360)]

    static func overlaps(_ rects: [MixRect]) -> Bool {
        for i in rects.indices {
            for j in rects.indices where j > i && rects[i].intersects(rects[j]) { return true }
        }
        return false
    }

    @Test(arguments: [LayoutTemplate.float, .grid, .screenShare, .pk])
    func everyTemplateForOneToSixteenPictures(template: LayoutTemplate) {
        for canvas in Self.canvases {
            for count in 1...16 {
                let places = TemplateGeometry.rects(for: template, canvas: canvas, count: count)
                #expect(places.count == count, "\(template.name) \(canvas) \(count)")
                for place in places {
                    #expect(place.rect.isInside(canvas), "\(template.name) \(canvas) \(count): \(place.rect)")
                    #expect(!place.rect.isEmpty, "\(template.name) \(canvas) \(count): \(place.rect)")
                    #expect(place.rect.isEvenAligned, "\(template.name) \(canvas) \(count): \(place.rect)")
                }
                let rects = places.map(\.rect)
                switch template {
                case .grid, .screenShare:
                    #expect(!Self.overlaps(rects), "\(template.name) \(canvas) \(count) overlaps")
                case .float:
                    #expect(rects[0] == MixRect(x: 0, y: 0, width: canvas.width, height: canvas.height))
                    #expect(!Self.overlaps(Array(rects.dropFirst())), "float tiles overlap \(canvas) \(count)")
                case .pk:
                    #expect(!Self.overlaps(rects), "pk \(canvas) \(count) overlaps")
                    #expect(rects.allSatisfy { $0.y == 0 && $0.height == canvas.height && $0.width == rects[0].width }, "pk \(canvas) \(count)")
                    #expect(rects.map(\.x) == rects.map(\.x).sorted(), "pk columns go left to right: \(canvas) \(count)")
                case .custom:
                    break
                }
            }
            #expect(TemplateGeometry.rects(for: template, canvas: canvas, count: 20).count == 16)
            #expect(TemplateGeometry.rects(for: template, canvas: canvas, count: 0).isEmpty)
        }
    }

    @Test func gridDimensions() {
        let expected = [1: (1, 1), 2: (2, 1), 3: (2, 2), 4: (2, 2), 5: (3, 3), 9: (3, 3), 10: (4, 4), 16: (4, 4)]
        for (count, (columns, rows)) in expected {
            let dimensions = TemplateGeometry.gridDimensions(count: count)
            #expect(dimensions.columns == columns && dimensions.rows == rows, "\(count)")
        }
    }

    @Test func gridExactRects() {
        let canvas = MixSize(width: 540, height: 960)
        #expect(TemplateGeometry.grid(canvas: canvas, count: 1) == [MixRect(x: 0, y: 0, width: 540, height: 960)])
        #expect(TemplateGeometry.grid(canvas: canvas, count: 2) == [MixRect(x: 0, y: 0, width: 270, height: 960), MixRect(x: 270, y: 0, width: 270, height: 960)])
        #expect(TemplateGeometry.grid(canvas: canvas, count: 3) == [
            MixRect(x: 0, y: 0, width: 270, height: 480), MixRect(x: 270, y: 0, width: 270, height: 480), MixRect(x: 0, y: 480, width: 270, height: 480),
        ])
        // 540 / 4 = 135 is odd: cells of 134, the grid centred with 2 pixels each side.
        let sixteen = TemplateGeometry.grid(canvas: canvas, count: 16)
        #expect(sixteen[0] == MixRect(x: 2, y: 0, width: 134, height: 240))
        #expect(sixteen[5] == MixRect(x: 136, y: 240, width: 134, height: 240))
        #expect(sixteen[15] == MixRect(x: 404, y: 720, width: 134, height: 240))
        #expect(TemplateGeometry.rects(for: .grid, canvas: canvas, count: 4).allSatisfy { $0.fillMode == .fit })
    }

    @Test func floatExactRects() {
        let canvas = MixSize(width: 540, height: 960)
        #expect(TemplateGeometry.floatGap(canvas: canvas) == 8)
        let places = TemplateGeometry.float(canvas: canvas, count: 7)
        #expect(places[0].fillMode == .fill)
        // Tiles of 124×222, bottom-up on the right with 8-pixel gaps; the fifth starts a second column.
        #expect(places[1].rect == MixRect(x: 408, y: 730, width: 124, height: 222))
        #expect(places[2].rect == MixRect(x: 408, y: 500, width: 124, height: 222))
        #expect(places[4].rect == MixRect(x: 408, y: 40, width: 124, height: 222))
        #expect(places[5].rect == MixRect(x: 276, y: 730, width: 124, height: 222))
        #expect(places[6].rect == MixRect(x: 276, y: 500, width: 124, height: 222))
        #expect(places.dropFirst().allSatisfy { $0.fillMode == .fill })
    }

    @Test func screenShareExactRects() {
        let canvas = MixSize(width: 1280, height: 720)
        #expect(TemplateGeometry.screenShare(canvas: canvas, count: 1).map(\.rect) == [MixRect(x: 0, y: 0, width: 1280, height: 720)])
        let three = TemplateGeometry.screenShare(canvas: canvas, count: 3)
        #expect(three.map(\.rect) == [MixRect(x: 0, y: 0, width: 1024, height: 720), MixRect(x: 1024, y: 0, width: 256, height: 90), MixRect(x: 1024, y: 90, width: 256, height: 90)])
        #expect(three.map(\.fillMode) == [.fit, .fill, .fill])
        let ten = TemplateGeometry.screenShare(canvas: canvas, count: 10)
        #expect(ten[0].rect == MixRect(x: 0, y: 0, width: 768, height: 720))
        #expect(ten[8].rect == MixRect(x: 768, y: 630, width: 256, height: 90))
        #expect(ten[9].rect == MixRect(x: 1024, y: 0, width: 256, height: 90))
    }

    @Test func pkColumnsOnALandscapeCanvas() {
        let canvas = MixSize(width: 1280, height: 720)
        #expect(TemplateGeometry.columns(canvas: canvas, count: 1) == [MixRect(x: 0, y: 0, width: 1280, height: 720)])
        #expect(TemplateGeometry.columns(canvas: canvas, count: 2) == [MixRect(x: 0, y: 0, width: 640, height: 720), MixRect(x: 640, y: 0, width: 640, height: 720)])
        // 1280 / 3 = 426.7: columns of 426, the 2 pixels left over not enough to centre by an even step.
        #expect(TemplateGeometry.columns(canvas: canvas, count: 3) == [
            MixRect(x: 0, y: 0, width: 426, height: 720), MixRect(x: 426, y: 0, width: 426, height: 720), MixRect(x: 852, y: 0, width: 426, height: 720),
        ])
        #expect(TemplateGeometry.rects(for: .pk, canvas: canvas, count: 3).allSatisfy { $0.fillMode == .fill })
    }

    @Test func pkColumnsOnAPortraitCanvas() {
        let canvas = MixSize(width: 720, height: 1280)
        #expect(TemplateGeometry.columns(canvas: canvas, count: 1) == [MixRect(x: 0, y: 0, width: 720, height: 1280)])
        #expect(TemplateGeometry.columns(canvas: canvas, count: 2) == [MixRect(x: 0, y: 0, width: 360, height: 1280), MixRect(x: 360, y: 0, width: 360, height: 1280)])
        #expect(TemplateGeometry.columns(canvas: canvas, count: 3) == [
            MixRect(x: 0, y: 0, width: 240, height: 1280), MixRect(x: 240, y: 0, width: 240, height: 1280), MixRect(x: 480, y: 0, width: 240, height: 1280),
        ])
        #expect(TemplateGeometry.rects(for: .pk, canvas: canvas, count: 2).map(\.rect) == TemplateGeometry.columns(canvas: canvas, count: 2))
    }

    @Test func pkColumnsStopAtSixteenAndAtTheCanvasWidth() {
        // 540 / 16 = 33.75: columns of 32, centred with 14 pixels each side.
        let sixteen = TemplateGeometry.columns(canvas: MixSize(width: 540, height: 960), count: 20)
        #expect(sixteen.count == 16)
        #expect(sixteen.first == MixRect(x: 14, y: 0, width: 32, height: 960))
        #expect(sixteen.last == MixRect(x: 494, y: 0, width: 32, height: 960))
        // An odd height is evened; a canvas 6 pixels wide has room for 3 columns.
        #expect(TemplateGeometry.columns(canvas: MixSize(width: 6, height: 9), count: 5) == [
            MixRect(x: 0, y: 0, width: 2, height: 8), MixRect(x: 2, y: 0, width: 2, height: 8), MixRect(x: 4, y: 0, width: 2, height: 8),
        ])
        #expect(TemplateGeometry.columns(canvas: MixSize(width: 0, height: 0), count: 2).isEmpty)
    }

    @Test func fillCropsTheSourceCentred() {
        let portrait = VideoPlacement.place(source: MixSize(width: 540, height: 960), in: MixRect(x: 0, y: 0, width: 270, height: 240), mode: .fill)
        #expect(portrait.source == MixRect(x: 0, y: 240, width: 540, height: 480))
        #expect(portrait.destination == MixRect(x: 0, y: 0, width: 270, height: 240))
        let landscape = VideoPlacement.place(source: MixSize(width: 1280, height: 720), in: MixRect(x: 10, y: 20, width: 270, height: 240), mode: .fill)
        #expect(landscape.source == MixRect(x: 234, y: 0, width: 810, height: 720))
        #expect(landscape.destination == MixRect(x: 10, y: 20, width: 270, height: 240))
    }

    @Test func fitLetterboxesTheWholeSource() {
        let portrait = VideoPlacement.place(source: MixSize(width: 540, height: 960), in: MixRect(x: 0, y: 0, width: 270, height: 240), mode: .fit)
        #expect(portrait.source == MixRect(x: 0, y: 0, width: 540, height: 960))
        #expect(portrait.destination == MixRect(x: 68, y: 0, width: 134, height: 240))
        let moved = VideoPlacement.place(source: MixSize(width: 540, height: 960), in: MixRect(x: 100, y: 200, width: 270, height: 240), mode: .fit)
        #expect(moved.destination == MixRect(x: 168, y: 200, width: 134, height: 240))
        let landscape = VideoPlacement.place(source: MixSize(width: 1280, height: 720), in: MixRect(x: 0, y: 0, width: 270, height: 240), mode: .fit)
        #expect(landscape.destination == MixRect(x: 0, y: 44, width: 270, height: 150))
    }

    @Test func stretchSameAspectAndOddSources() {
        let stretch = VideoPlacement.place(source: MixSize(width: 540, height: 960), in: MixRect(x: 0, y: 0, width: 270, height: 240), mode: .stretch)
        #expect(stretch == VideoPlacement(source: MixRect(x: 0, y: 0, width: 540, height: 960), destination: MixRect(x: 0, y: 0, width: 270, height: 240)))
        for mode in [VideoFillMode.fill, .fit] {
            let same = VideoPlacement.place(source: MixSize(width: 640, height: 360), in: MixRect(x: 0, y: 0, width: 320, height: 180), mode: mode)
            #expect(same == VideoPlacement(source: MixRect(x: 0, y: 0, width: 640, height: 360), destination: MixRect(x: 0, y: 0, width: 320, height: 180)))
        }
        let odd = VideoPlacement.place(source: MixSize(width: 641, height: 361), in: MixRect(x: 0, y: 0, width: 320, height: 180), mode: .fit)
        #expect(odd.source == MixRect(x: 0, y: 0, width: 640, height: 360))
        #expect(odd.source.isEvenAligned && odd.destination.isEvenAligned)
    }

    @Test func evenAlignment() {
        #expect(MixRect(x: 401, y: 251, width: 135, height: 239).evenAligned == MixRect(x: 400, y: 250, width: 136, height: 240))
        #expect(MixRect(x: 0, y: 0, width: 1, height: 1).evenAligned.isEmpty)
    }
}
