/// Pure layout math: from a mixing config and the anchors present now, what to draw where
/// and whose audio to mix.
public enum MixLayoutEngine {
    /// Composes one moment of a mix.
    ///
    /// - Parameters:
    ///   - config: the task's mixing config (templates are expanded here).
    ///   - canvas: the output size (`videoEncodedWidth` × `videoEncodedHeight`); 0×0 mixes audio only.
    ///   - anchors: the publishing anchors present, in join order (anchors of other rooms for PK included).
    ///     An anchor given twice (the same ``MixUser`` once its room is resolved) counts once, as first given.
    ///   - taskRoomId: the task's room key; users with an empty room id are in it. An anchor is of
    ///     the task's own room when its resolved `roomId` equals it, of another room otherwise.
    ///   - excluding: users never mixed (the robot of a `mixStreamToRoom` task).
    ///
    /// Layout entries with a fixed user show that user's video, or the placeholder image
    /// (else colour) while the user is absent, has no video or has muted it. Entries without
    /// one take the remaining publishing anchors in join order; entries left over draw nothing.
    public static func compose(
        config: StreamMixingConfig, canvas: MixSize, anchors: [MixAnchor], taskRoomId: String, excluding: Set<MixUser> = []
    ) -> MixFrameLayout {
        // Rects reaching past the canvas are drawn clipped to it.
        let config = config.clipped(to: canvas)
        let excluded = Set(excluding.map { $0.resolved(in: taskRoomId) })
        var present: [MixAnchor] = []
        var seen = Set<MixUser>()
        for var anchor in anchors {
            anchor.user = anchor.user.resolved(in: taskRoomId)
            guard !excluded.contains(anchor.user), seen.insert(anchor.user).inserted else { continue }
            present.append(anchor)
        }
        if config.template == .pk {
            // The audio's order (which matters only at the input limit) follows the columns'.
            present = ownRoomFirst(present, taskRoomId: taskRoomId)
        }
        var items: [MixDrawItem] = []
        if !canvas.isEmpty {
            let layouts = resolvedLayouts(config: config, canvas: canvas, present: present, taskRoomId: taskRoomId)
            let byUser = Dictionary(present.map { ($0.user, $0) }, uniquingKeysWith: { first, _ in first })
            for (index, layout) in layouts.enumerated() {
                // A layout clipped away (wholly outside the canvas) draws nothing.
                guard let user = layout.fixedVideoUser, !layout.rect.evenAligned.isEmpty else { continue }
                items.append(drawItem(layout, index: index, user: user, anchor: byUser[user]))
            }
            for (index, watermark) in config.watermarkList.enumerated() {
                let rect = watermark.rect.evenAligned
                guard !rect.isEmpty else { continue }
                items.append(MixDrawItem(rect: rect, zOrder: watermark.zOrder, origin: .watermark(index), user: nil, content: .image(url: watermark.watermarkUrl)))
            }
            items = sortedForDrawing(items)
        }
        let videoUsers = items.compactMap { item -> MixUser? in
            if case .video(let user, _, _) = item.content { return user }
            return nil
        }
        let audio = audioMix(config: config, present: present, videoUsers: videoUsers, taskRoomId: taskRoomId)
        return MixFrameLayout(
            canvas: canvas, backgroundColor: config.backgroundColor, backgroundImage: canvas.isEmpty ? "" : config.backgroundImage,
            items: items, audio: audio)
    }

    /// The layouts with every place decided: templates expanded for the present anchors,
    /// automatic entries of a custom layout given their anchor (or left without a user).
    /// Fixed users come back with their room resolved.
    public static func resolvedLayouts(
        config: StreamMixingConfig, canvas: MixSize, present: [MixAnchor], taskRoomId: String
    ) -> [VideoLayout] {
        let candidates = present.filter { anchor in
            anchor.hasVideo || anchor.subStreamSize != nil || (config.pureAudioHoldsPlace && anchor.hasAudio)
        }
        if config.template != .custom {
            var ordered = candidates
            // PK columns go by room, never by a main user.
            let main = config.template == .pk ? nil : config.templateMainUser?.resolved(in: taskRoomId)
            if config.template == .pk {
                ordered = ownRoomFirst(ordered, taskRoomId: taskRoomId)
            } else if let main, let index = ordered.firstIndex(where: { $0.user == main }) {
                ordered.insert(ordered.remove(at: index), at: 0)
            }
            let geometry = TemplateGeometry.rects(for: config.template, canvas: canvas, count: ordered.count)
            return geometry.enumerated().map { index, place in
                let user = ordered[index].user
                let isMain = index == 0 && main == user
                return VideoLayout(
                    rect: place.rect, zOrder: index, fillMode: config.templateFillMode ?? place.fillMode,
                    fixedVideoUser: user, fixedVideoStreamType: isMain ? config.templateMainStreamType : .big)
            }
        }
        var layouts = config.videoLayoutList.map { layout -> VideoLayout in
            var layout = layout
            layout.rect = layout.rect.evenAligned
            layout.fixedVideoUser = layout.fixedVideoUser?.resolved(in: taskRoomId)
            return layout
        }
        let placed = Set(layouts.compactMap(\.fixedVideoUser))
        var queue = candidates.filter { !placed.contains($0.user) }[...]
        for index in layouts.indices where layouts[index].fixedVideoUser == nil {
            guard let next = queue.popFirst() else { break }
            layouts[index].fixedVideoUser = next.user
        }
        return layouts
    }

    /// `anchors` with those of the task's own room (resolved `roomId` equal to `taskRoomId`)
    /// first and those of other rooms after, each group in its given order: the PK template's order.
    public static func ownRoomFirst(_ anchors: [MixAnchor], taskRoomId: String) -> [MixAnchor] {
        func isOwn(_ anchor: MixAnchor) -> Bool { anchor.user.resolved(in: taskRoomId).roomId == taskRoomId }
        return anchors.filter(isOwn) + anchors.filter { !isOwn($0) }
    }

    /// The audio mix: `audioMixUserList` (or every present anchor with audio when empty),
    /// less `audioExcludeUserList`, present and sending audio, each user once (the first
    /// entry's volume wins), the volume clamped to 0–100. Audio-only users are added only
    /// while video and audio inputs together stay within 16.
    public static func audioMix(config: StreamMixingConfig, present: [MixAnchor], videoUsers: [MixUser], taskRoomId: String) -> [AudioMixInput] {
        let sending = Set(present.filter(\.hasAudio).map { $0.user.resolved(in: taskRoomId) })
        let excluded = Set(config.audioExcludeUserList.map { $0.resolved(in: taskRoomId) })
        let wanted: [AudioMixInput] =
            config.audioMixUserList.isEmpty
            ? present.map { AudioMixInput(user: $0.user.resolved(in: taskRoomId)) }
            : config.audioMixUserList.map { AudioMixInput(user: $0.user.resolved(in: taskRoomId), volume: $0.volume) }
        var inputs = Set(videoUsers)
        var seen = Set<MixUser>()
        var result: [AudioMixInput] = []
        for var entry in wanted where sending.contains(entry.user) && !excluded.contains(entry.user) {
            guard seen.insert(entry.user).inserted else { continue }
            guard inputs.contains(entry.user) || inputs.count < StreamMixingConfig.maxInputs else { continue }
            inputs.insert(entry.user)
            entry.volume = min(100, max(0, entry.volume))
            result.append(entry)
        }
        return result
    }

    static func drawItem(_ layout: VideoLayout, index: Int, user: MixUser, anchor: MixAnchor?) -> MixDrawItem {
        var item = MixDrawItem(
            rect: layout.rect, zOrder: layout.zOrder, origin: .layout(index), user: user,
            content: layout.placeHolderImage.isEmpty ? .color(layout.backgroundColor) : .image(url: layout.placeHolderImage))
        if let anchor, let size = anchor.drawableSize(layout.fixedVideoStreamType) {
            let placement = VideoPlacement.place(source: size, in: layout.rect, mode: layout.fillMode)
            item.content = .video(user: user, streamType: layout.fixedVideoStreamType, placement: placement)
            if placement.destination != layout.rect { item.backgroundColor = layout.backgroundColor }
        }
        return item
    }

    /// Bottom layer first; at one zOrder video layouts before watermarks, then list order.
    static func sortedForDrawing(_ items: [MixDrawItem]) -> [MixDrawItem] {
        func key(_ item: MixDrawItem) -> (Int, Int, Int) {
            switch item.origin {
            case .layout(let index): (item.zOrder, 0, index)
            case .watermark(let index): (item.zOrder, 1, index)
            }
        }
        return items.sorted { key($0) < key($1) }
    }
}
