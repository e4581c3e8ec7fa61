import LiveRoomProtocol

/// The layout and audio of a mix (TRTC's `TRTCStreamMixingConfig`, the admin API's
/// `VideoParams.LayoutParams` and `AudioParams`).
public struct StreamMixingConfig: Sendable, Hashable, Codable {
    /// The most inputs one mix takes; an audio-only input counts as one.
    public static let maxInputs = 16
    /// The most watermarks one mix draws.
    public static let maxWatermarks = 16
    /// The longest image URL or file name (placeholders, background, watermarks).
    public static let maxImageURLBytes = 1024
    /// The zOrder range of layouts and watermarks.
    public static let zOrderRange = 0...15

    /// The canvas colour, 0xRRGGBB.
    public var backgroundColor: UInt32
    /// The canvas image URL, drawn over the colour; empty for none.
    public var backgroundImage: String
    /// How layouts are decided; ``LayoutTemplate/custom`` uses ``videoLayoutList``.
    public var template: LayoutTemplate
    /// The user shown large by the float and screen-share templates (admin `MaxVideoUser`);
    /// `nil` means the first anchor to join. The grid puts this user first; PK ignores it.
    public var templateMainUser: MixUser?
    public var templateMainStreamType: MixStreamType
    /// The fill mode of template pictures (admin `LayoutParams.RenderMode`); `nil` for each
    /// template's own (float and screen-share tiles and PK columns fill, grid cells and the screen-share main picture fit).
    public var templateFillMode: VideoFillMode?
    /// Whether anchors that publish audio but no video take a place in templates and
    /// automatically filled layouts, showing their placeholder (admin `PureAudioHoldPlaceMode`).
    public var pureAudioHoldsPlace: Bool
    public var videoLayoutList: [VideoLayout]
    /// The users to mix the audio of; empty means every anchor sending audio.
    public var audioMixUserList: [AudioMixUser]
    /// Users whose audio is never mixed (admin `UnSubscribeAudioList`).
    public var audioExcludeUserList: [MixUser]
    public var watermarkList: [Watermark]

    public init(
        backgroundColor: UInt32 = 0, backgroundImage: String = "", template: LayoutTemplate = .custom,
        templateMainUser: MixUser? = nil, templateMainStreamType: MixStreamType = .big, templateFillMode: VideoFillMode? = nil,
        pureAudioHoldsPlace: Bool = true, videoLayoutList: [VideoLayout] = [], audioMixUserList: [AudioMixUser] = [], audioExcludeUserList: [MixUser] = [],
        watermarkList: [Watermark] = []
    ) {
        self.backgroundColor = backgroundColor
        self.backgroundImage = backgroundImage
        self.template = template
        self.templateMainUser = templateMainUser
        self.templateMainStreamType = templateMainStreamType
        self.templateFillMode = templateFillMode
        self.pureAudioHoldsPlace = pureAudioHoldsPlace
        self.videoLayoutList = videoLayoutList
        self.audioMixUserList = audioMixUserList
        self.audioExcludeUserList = audioExcludeUserList
        self.watermarkList = watermarkList
    }

    /// Checks the layouts and watermarks against the canvas, zOrders, input counts and volumes.
    /// With an audio-only `canvas` (0×0) video layouts and watermarks are refused.
    public func validate(canvas: MixSize, field: String = "mixingConfig") throws(LiveRoomError) {
        guard backgroundColor <= 0xFF_FFFF else {
            throw LiveRoomError(ErrorCode.invalidBackground, "\(field).backgroundColor must be 0xRRGGBB")
        }
        if canvas.isEmpty, !videoLayoutList.isEmpty || !watermarkList.isEmpty {
            throw LiveRoomError(
                ErrorCode.invalidVideoResolution,
                "\(field) has video layouts or watermarks but the output is audio-only (videoEncodedWidth and videoEncodedHeight are 0)")
        }
        guard videoLayoutList.count <= Self.maxInputs else {
            throw LiveRoomError(
                ErrorCode.tooManyInputs,
                "\(field).videoLayoutList has \(videoLayoutList.count) entries; a mix takes at most \(Self.maxInputs) inputs")
        }
        guard audioMixUserList.count <= Self.maxInputs else {
            throw LiveRoomError(
                ErrorCode.tooManyInputs,
                "\(field).audioMixUserList has \(audioMixUserList.count) users; a mix takes at most \(Self.maxInputs) inputs")
        }
        for (index, layout) in videoLayoutList.enumerated() {
            let name = "\(field).videoLayoutList[\(index)]"
            guard Self.zOrderRange.contains(layout.zOrder) else {
                throw LiveRoomError(ErrorCode.invalidZOrder, "\(name).zOrder is \(layout.zOrder); it must be 0 to 15")
            }
            try Self.checkRect(layout.rect, canvas: canvas, name: "\(name).rect")
            guard layout.backgroundColor <= 0xFF_FFFF else {
                throw LiveRoomError(ErrorCode.invalidLayout, "\(name).backgroundColor must be 0xRRGGBB")
            }
            if let user = layout.fixedVideoUser, user.userId.isEmpty {
                throw LiveRoomError(ErrorCode.invalidLayout, "\(name).fixedVideoUser.userId is empty; leave fixedVideoUser out to fill the place automatically")
            }
        }
        guard watermarkList.count <= Self.maxWatermarks else {
            throw LiveRoomError(
                ErrorCode.invalidWatermark, "\(field).watermarkList has \(watermarkList.count) entries; a mix draws at most \(Self.maxWatermarks)")
        }
        try Self.checkImage(backgroundImage, name: "\(field).backgroundImage", code: ErrorCode.invalidBackground)
        for (index, layout) in videoLayoutList.enumerated() {
            try Self.checkImage(layout.placeHolderImage, name: "\(field).videoLayoutList[\(index)].placeHolderImage", code: ErrorCode.invalidLayout)
        }
        for (index, watermark) in watermarkList.enumerated() {
            try Self.checkImage(watermark.watermarkUrl, name: "\(field).watermarkList[\(index)].watermarkUrl", code: ErrorCode.invalidWatermark)
            let name = "\(field).watermarkList[\(index)]"
            guard !watermark.watermarkUrl.isEmpty else {
                throw LiveRoomError(ErrorCode.invalidWatermark, "\(name).watermarkUrl is empty")
            }
            guard Self.zOrderRange.contains(watermark.zOrder) else {
                throw LiveRoomError(ErrorCode.invalidZOrder, "\(name).zOrder is \(watermark.zOrder); it must be 0 to 15")
            }
            try Self.checkRect(watermark.rect, canvas: canvas, name: "\(name).rect")
        }
        for (index, entry) in audioMixUserList.enumerated() {
            let name = "\(field).audioMixUserList[\(index)]"
            guard !entry.user.userId.isEmpty else {
                throw LiveRoomError(ErrorCode.invalidAudioMixUser, "\(name).userId is empty")
            }
            guard (0...100).contains(entry.volume) else {
                throw LiveRoomError(ErrorCode.invalidAudioMixUser, "\(name).volume is \(entry.volume); it must be 0 to 100")
            }
        }
        // Every distinct fixed user, audio user and automatically filled place is one input.
        var fixedUsers = Set<MixUser>()
        var automaticPlaces = 0
        for layout in videoLayoutList {
            if let user = layout.fixedVideoUser { fixedUsers.insert(user) } else { automaticPlaces += 1 }
        }
        let inputs = fixedUsers.union(audioMixUserList.map(\.user)).count + automaticPlaces
        guard inputs <= Self.maxInputs else {
            throw LiveRoomError(
                ErrorCode.tooManyInputs,
                "\(field) mixes \(inputs) inputs (video layouts and audio users together); at most \(Self.maxInputs), an audio-only user counts as one")
        }
    }

    /// What a valid config asks that the mix does differently, for the answer: layouts sharing a
    /// zOrder (drawn in list order) and rects reaching past the canvas (clipped to it), as TRTC's
    /// own e-commerce sample has them.
    public func warnings(canvas: MixSize, field: String = "mixingConfig") -> [String] {
        var warnings: [String] = []
        var firstAt: [Int: Int] = [:]
        for (index, layout) in videoLayoutList.enumerated() {
            if let other = firstAt[layout.zOrder] {
                warnings.append("\(field).videoLayoutList[\(index)] shares zOrder \(layout.zOrder) with [\(other)]; drawn in list order")
            } else {
                firstAt[layout.zOrder] = index
            }
        }
        let rects = videoLayoutList.enumerated().map { ("\(field).videoLayoutList[\($0.offset)].rect", $0.element.rect) }
            + watermarkList.enumerated().map { ("\(field).watermarkList[\($0.offset)].rect", $0.element.rect) }
        for (name, rect) in rects where !canvas.isEmpty && !rect.isInside(canvas) {
            let visible = rect.clipped(to: canvas)
            warnings.append(
                visible.evenAligned.isEmpty
                    ? "\(name) \(rect) lies outside the \(canvas) canvas; not drawn"
                    : "\(name) \(rect) reaches past the \(canvas) canvas; clipped to \(visible)")
        }
        return warnings
    }

    /// The config with every layout and watermark rect clipped to the canvas. A config already
    /// inside it (the usual case, composed every frame) is returned as it is, without copying.
    public func clipped(to canvas: MixSize) -> StreamMixingConfig {
        var config = self
        for index in config.videoLayoutList.indices where !config.videoLayoutList[index].rect.isInside(canvas) {
            config.videoLayoutList[index].rect = config.videoLayoutList[index].rect.clipped(to: canvas)
        }
        for index in config.watermarkList.indices where !config.watermarkList[index].rect.isInside(canvas) {
            config.watermarkList[index].rect = config.watermarkList[index].rect.clipped(to: canvas)
        }
        return config
    }

    static func checkImage(_ url: String, name: String, code: Int) throws(LiveRoomError) {
        guard url.utf8.count <= maxImageURLBytes else {
            throw LiveRoomError(code, "\(name) is \(url.utf8.count) bytes long; image URLs are at most \(maxImageURLBytes)")
        }
    }

    /// Every image the mix draws: the background, placeholders and watermarks.
    public var imageURLs: Set<String> {
        Set([backgroundImage] + videoLayoutList.map(\.placeHolderImage) + watermarkList.map(\.watermarkUrl)).subtracting([""])
    }

    static func checkRect(_ rect: MixRect, canvas: MixSize, name: String) throws(LiveRoomError) {
        guard !rect.isEmpty else {
            throw LiveRoomError(ErrorCode.invalidLayoutRect, "\(name) \(rect) is empty; width and height must be positive")
        }
        // A rect reaching past the canvas, or wholly outside it, is clipped (see warnings(canvas:)).
        guard !rect.evenAligned.isEmpty else {
            throw LiveRoomError(ErrorCode.invalidLayoutRect, "\(name) \(rect) is empty once its edges are aligned to even pixels")
        }
    }
}
