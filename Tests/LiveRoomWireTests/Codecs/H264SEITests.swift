import NIOCore
import Testing
@testable import LiveRoomWire

@Suite("H.264 SEI NAL units (H.264 7.3.2.3, D.1)")
struct H264SEITests {
    static let aud: [UInt8] = [0x09, 0xF0]
    static let sps = hexBytes("67 42 c0 1f da 01 40 16 e8 40")
    static let pps = hexBytes("68 ce 3c 80")
    static let idr: [UInt8] = [0x65, 0x88, 0x84, 0x21, 0x7F, 0x11]
    static let slice: [UInt8] = [0x41, 0x9A, 0x22, 0x33]
    static let uuid: [UInt8] = Array(0xA0...0xAF)

    /// An Annex B access unit of `units`, each after a four-byte start code.
    static func annexB(_ units: [[UInt8]]) -> [UInt8] {
        units.flatMap { [0, 0, 0, 1] + $0 }
    }

    /// Whether `unit` holds a 00 00 0x sequence (x ≤ 3) that is not an emulation prevention 03.
    static func hasStartCodeEmulation(_ unit: [UInt8]) -> Bool {
        var zeros = 0
        for byte in unit {
            if zeros >= 2 && byte <= 3 {
                if byte != 3 { return true }
                zeros = 0
                continue
            }
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return false
    }

    // MARK: Building and reading

    @Test func oneMessageHasTheExactBytes() {
        #expect(H264SEI.nalUnit([SEIMessage(data: [0x68, 0x69])]) == [0x06, 0xF2, 0x02, 0x68, 0x69, 0x80])
        #expect(H264SEI.nalUnit([SEIMessage(payloadType: 5, uuid: Self.uuid, data: [0x01])]) == [0x06, 0x05, 0x11] + Self.uuid + [0x01, 0x80])
        #expect(H264SEI.nalUnit([SEIMessage]()) == [0x06, 0x80])
    }

    @Test func severalMessagesRoundTrip() {
        let messages = [
            SEIMessage(data: Array("{\"pop\":\"up\"}".utf8)),
            SEIMessage(payloadType: 5, uuid: Self.uuid, data: Array("with a uuid".utf8)),
            SEIMessage(payloadType: 100, data: [1]),
            SEIMessage(payloadType: 254, data: Array(repeating: 0x7E, count: 300)),
            SEIMessage(payloadType: 5, uuid: Self.uuid, data: []),
        ]
        let unit = H264SEI.nalUnit(messages)
        #expect(unit.first == H264NALUnitType.sei)
        #expect(unit.last == 0x80)
        #expect(H264SEI.messages(inNALUnit: unit) == messages.map { TaggedSEIMessage(message: $0) })
    }

    @Test func tagsComeBackWithTheMessageAfterThem() {
        let first = TaggedSEIMessage(message: SEIMessage(data: [1, 2, 3]), tag: SEITag(sequence: 41, sentAtMilliseconds: 1_700_000_000_000))
        let second = TaggedSEIMessage(message: SEIMessage(payloadType: 5, uuid: Self.uuid, data: [4]), tag: SEITag(sequence: 42, sentAtMilliseconds: 1_700_000_000_040))
        let untagged = TaggedSEIMessage(message: SEIMessage(payloadType: 200, data: [5]))
        let unit = H264SEI.nalUnit([first, untagged, second])
        // Each tag is its own payload type 5 message right before its message.
        #expect(H264SEI.nalUnit([first.tag!.message, first.message, untagged.message, second.tag!.message, second.message]) == unit)
        #expect(H264SEI.messages(inNALUnit: unit) == [first, untagged, second])
    }

    @Test func aTagBeforeAMessageThatIsLeftOutIsDropped() {
        let tag = SEITag(sequence: 1, sentAtMilliseconds: 2).message
        let unit = H264SEI.nalUnit([tag, SEIMessage(payloadType: 1, data: [9]), SEIMessage(data: [7])])
        #expect(H264SEI.messages(inNALUnit: unit) == [TaggedSEIMessage(message: SEIMessage(data: [7]))])
        // A tag at the end tags nothing.
        #expect(H264SEI.messages(inNALUnit: H264SEI.nalUnit([SEIMessage(data: [7]), tag])) == [TaggedSEIMessage(message: SEIMessage(data: [7]))])
    }

    // MARK: payloadType and payloadSize coding

    @Test func sizesOf255AndMoreAreCodedWithFFBytes() {
        let data254 = [UInt8](repeating: 0x11, count: 254)
        let data255 = [UInt8](repeating: 0x11, count: 255)
        let data510 = [UInt8](repeating: 0x11, count: 510)
        let data600 = [UInt8](repeating: 0x11, count: 600)
        #expect(H264SEI.nalUnit([SEIMessage(data: data254)]) == [0x06, 0xF2, 0xFE] + data254 + [0x80])
        #expect(H264SEI.nalUnit([SEIMessage(data: data255)]) == [0x06, 0xF2, 0xFF, 0x00] + data255 + [0x80])
        #expect(H264SEI.nalUnit([SEIMessage(data: data510)]) == [0x06, 0xF2, 0xFF, 0xFF, 0x00] + data510 + [0x80])
        // 600 = 255 + 255 + 90.
        #expect(H264SEI.nalUnit([SEIMessage(data: data600)]) == [0x06, 0xF2, 0xFF, 0xFF, 0x5A] + data600 + [0x80])
        // Payload type 5: the size counts the UUID, 16 + 300 = 316 = 255 + 61.
        let data300 = [UInt8](repeating: 0x22, count: 300)
        #expect(H264SEI.nalUnit([SEIMessage(payloadType: 5, uuid: Self.uuid, data: data300)]) == [0x06, 0x05, 0xFF, 0x3D] + Self.uuid + data300 + [0x80])
        for data in [data254, data255, data510, data600, data300, [UInt8](repeating: 0x33, count: SEIMessage.maxDataLength)] {
            let message = SEIMessage(data: data)
            #expect(H264SEI.messages(inNALUnit: H264SEI.nalUnit([message, SEIMessage(payloadType: 101, data: [1])])).map(\.message) == [
                message, SEIMessage(payloadType: 101, data: [1]),
            ])
        }
    }

    @Test func payloadTypesOf255AndMoreAreCodedWithFFBytes() {
        // 256 = 255 + 1, 600 = 255 + 255 + 90: not a type a sender may use, so not listed back.
        #expect(H264SEI.nalUnit([SEIMessage(payloadType: 256, data: [7])]) == [0x06, 0xFF, 0x01, 0x01, 0x07, 0x80])
        #expect(H264SEI.nalUnit([SEIMessage(payloadType: 600, data: [7])]) == [0x06, 0xFF, 0xFF, 0x5A, 0x01, 0x07, 0x80])
        let unit = H264SEI.nalUnit([SEIMessage(payloadType: 600, data: [7]), SEIMessage(data: [8])])
        #expect(H264SEI.messages(inNALUnit: unit) == [TaggedSEIMessage(message: SEIMessage(data: [8]))])
    }

    // MARK: Emulation prevention

    @Test func startCodeLikeDataIsEscapedExactly() {
        // payloadSize 3 then 00 00 01: an 03 goes before the 01.
        #expect(H264SEI.nalUnit([SEIMessage(data: [0, 0, 1])]) == [0x06, 0xF2, 0x03, 0x00, 0x00, 0x03, 0x01, 0x80])
        // 00 00 03 in the data gets its own 03.
        #expect(H264SEI.nalUnit([SEIMessage(data: [0, 0, 3])]) == [0x06, 0xF2, 0x03, 0x00, 0x00, 0x03, 0x03, 0x80])
        // Five zeros: 00 00 03 00 00 03 00.
        #expect(H264SEI.nalUnit([SEIMessage(data: [0, 0, 0, 0, 0])]) == [0x06, 0xF2, 0x05, 0x00, 0x00, 0x03, 0x00, 0x00, 0x03, 0x00, 0x80])
        // 00 00 04 and 00 00 80 need nothing.
        #expect(H264SEI.nalUnit([SEIMessage(data: [0, 0, 4])]) == [0x06, 0xF2, 0x03, 0x00, 0x00, 0x04, 0x80])
        #expect(H264SEI.nalUnit([SEIMessage(data: [0, 0])]) == [0x06, 0xF2, 0x02, 0x00, 0x00, 0x80])
    }

    @Test func startCodeLikeDataComesBackIntact() {
        var data: [UInt8] = []
        for last in 0...3 { data += [0x00, 0x00, UInt8(last), 0x55] }
        data += [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x03, 0x03, 0x00, 0x00]
        let messages = [
            SEIMessage(data: data),
            SEIMessage(payloadType: 5, uuid: [0, 0, 0, 1] + Array(repeating: 0, count: 12), data: data),
            SEIMessage(payloadType: 100, data: [UInt8](repeating: 0, count: 600)),
        ]
        let unit = H264SEI.nalUnit(messages)
        #expect(!Self.hasStartCodeEmulation(unit))
        #expect(H264SEI.messages(inNALUnit: unit).map(\.message) == messages)
        // And inside an access unit, where a start code in the data would cut the unit.
        let accessUnit = H264SEI.inserting(unit, into: Self.annexB([Self.sps, Self.pps, Self.idr]))
        #expect(H264SEI.messages(inAccessUnit: accessUnit).map(\.message) == messages)
    }

    @Test func randomDataNeverEmulatesAStartCodeAndRoundTrips() {
        var generator = SeededGenerator(seed: 0x5E1)
        for _ in 0..<300 {
            // Mostly zeros and small bytes, where emulation prevention matters.
            let count = Int.random(in: 0...SEIMessage.maxDataLength, using: &generator)
            let data = (0..<count).map { _ in Bool.random(using: &generator) ? 0 : UInt8.random(in: 0...4, using: &generator) }
            let message = SEIMessage(payloadType: [5, 100, 242, 254].randomElement(using: &generator)!, data: data)
            let sent = message.payloadType == 5 ? SEIMessage(payloadType: 5, uuid: Array(repeating: 0, count: 16), data: data) : message
            let unit = H264SEI.nalUnit([sent])
            #expect(!Self.hasStartCodeEmulation(unit))
            #expect(H264SEI.messages(inNALUnit: unit).map(\.message) == [sent])
        }
    }

    // MARK: What is not listed

    @Test func x264sVersionAndTheDecodersOwnTypesAreNotListed() {
        let x264 = SEIMessage(payloadType: 5, uuid: H264SEI.x264UUID, data: Array("x264 - core 164 r3108 - H.264/MPEG-4 AVC codec".utf8))
        let mine = SEIMessage(data: Array("pop-up".utf8))
        var messages = [x264]
        for type in [0, 1, 2, 3, 4, 6, 99, 244, 255, 300] { messages.append(SEIMessage(payloadType: type, data: [0x40, UInt8(type & 0x7F)])) }
        messages.append(mine)
        #expect(H264SEI.messages(inNALUnit: H264SEI.nalUnit(messages)) == [TaggedSEIMessage(message: mine)])
        // A payload type 5 message too short for its UUID is skipped, not misread.
        #expect(H264SEI.messages(inNALUnit: [0x06, 0x05, 0x03, 0x01, 0x02, 0x03, 0xF2, 0x01, 0x09, 0x80]) == [
            TaggedSEIMessage(message: SEIMessage(data: [9]))
        ])
    }

    // MARK: Malformed input

    @Test func malformedUnitsGiveWhatIsWhole() {
        let whole = SEIMessage(data: [1, 2, 3])
        let wholeUnit = H264SEI.nalUnit([whole])
        let withoutTrailing = Array(wholeUnit.dropLast())
        // Empty, header only, another NAL unit type.
        #expect(H264SEI.messages(inNALUnit: [UInt8]()).isEmpty)
        #expect(H264SEI.messages(inNALUnit: [0x06]).isEmpty)
        #expect(H264SEI.messages(inNALUnit: [0x06, 0x80]).isEmpty)
        #expect(H264SEI.messages(inNALUnit: [0x05] + wholeUnit.dropFirst()).isEmpty)
        #expect(H264SEI.messages(inNALUnit: [0x67] + wholeUnit.dropFirst()).isEmpty)
        // The header's nal_ref_idc bits do not matter.
        #expect(H264SEI.messages(inNALUnit: [0x26] + wholeUnit.dropFirst()).map(\.message) == [whole])
        // Without the trailing bits, and with zero bytes after them.
        #expect(H264SEI.messages(inNALUnit: withoutTrailing).map(\.message) == [whole])
        #expect(H264SEI.messages(inNALUnit: wholeUnit + [0, 0, 0]).map(\.message) == [whole])
        // A size past the end: the first message stays.
        #expect(H264SEI.messages(inNALUnit: withoutTrailing + [0xF2, 0x10, 0x01, 0x02, 0x80]).map(\.message) == [whole])
        #expect(H264SEI.messages(inNALUnit: [0x06, 0xF2, 0x10, 0x01, 0x02, 0x80]).isEmpty)
        // A type or size cut off after its FF bytes.
        #expect(H264SEI.messages(inNALUnit: withoutTrailing + [0xF2, 0xFF, 0xFF]).map(\.message) == [whole])
        #expect(H264SEI.messages(inNALUnit: withoutTrailing + [0xFF]).map(\.message) == [whole])
        // A huge size: a million FF bytes would overflow nothing, and thousands end the list.
        #expect(H264SEI.messages(inNALUnit: withoutTrailing + [0xF2] + [UInt8](repeating: 0xFF, count: 5000) + [0x01, 0x80]).map(\.message) == [whole])
        #expect(H264SEI.messages(inNALUnit: withoutTrailing + [0xF2] + [UInt8](repeating: 0xFF, count: 1000) + [0x01, 0x80]).map(\.message) == [whole])
        #expect(H264SEI.messages(inNALUnit: [0x06] + [UInt8](repeating: 0xFF, count: 100_000)).isEmpty)
    }

    @Test func atMost32MessagesAreReadFromOneUnit() {
        #expect(H264SEI.maxMessagesPerNALUnit == 32)
        let messages = (0..<40).map { SEIMessage(data: [UInt8($0)]) }
        let read = H264SEI.messages(inNALUnit: H264SEI.nalUnit(messages))
        #expect(read.map(\.message) == Array(messages.prefix(32)))
    }

    @Test func hostileUnitsNeverCrashAndListOnlyAllowedTypes() {
        let seeds = [
            H264SEI.nalUnit([SEIMessage(data: [0, 0, 1, 2])]),
            H264SEI.nalUnit([TaggedSEIMessage(message: SEIMessage(payloadType: 5, uuid: Self.uuid, data: [0, 0, 0]), tag: SEITag(sequence: 3, sentAtMilliseconds: 4))]),
            H264SEI.nalUnit([SEIMessage(data: [UInt8](repeating: 0xFF, count: 300))]),
        ]
        for input in hostileInputs(seeds: seeds) {
            let bytes = input.bytes
            for tagged in H264SEI.messages(inNALUnit: bytes) {
                #expect(SEIMessage.isAllowedPayloadType(tagged.message.payloadType))
                #expect(tagged.message.payload.count <= bytes.count)
                #expect((tagged.message.payloadType == 5) == (tagged.message.uuid?.count == 16))
            }
            _ = H264SEI.messages(inAccessUnit: [0, 0, 1] + bytes)
            _ = H264SEI.messages(inAccessUnit: bytes)
            _ = H264SEI.inserting(bytes, into: [0, 0, 1] + bytes)
        }
    }

    // MARK: Access units

    @Test func insertingPutsTheUnitRightBeforeTheFirstSlice() throws {
        let sei = H264SEI.nalUnit([SEIMessage(data: [0x42])])
        let earlierSEI = H264SEI.nalUnit([SEIMessage(payloadType: 5, uuid: H264SEI.x264UUID, data: [0x78])])
        let keyframe = H264SEI.inserting(sei, into: Self.annexB([Self.aud, Self.sps, Self.pps, earlierSEI, Self.idr, Self.idr]))
        #expect(try H264AnnexB.split(ByteBuffer(bytes: keyframe)).map(\.bytes) == [Self.aud, Self.sps, Self.pps, earlierSEI, sei, Self.idr, Self.idr])
        #expect(keyframe == Self.annexB([Self.aud, Self.sps, Self.pps, earlierSEI, sei, Self.idr, Self.idr]))

        let delta = H264SEI.inserting(sei, into: Self.annexB([Self.slice]))
        #expect(delta == Self.annexB([sei, Self.slice]))

        // Three-byte start codes and a slice after another NAL unit.
        let short = [0, 0, 1] + Self.aud + [0, 0, 1] + Self.slice + [0, 0, 1] + Self.slice
        #expect(try H264AnnexB.split(ByteBuffer(bytes: H264SEI.inserting(sei, into: short))).map(\.bytes) == [Self.aud, sei, Self.slice, Self.slice])
    }

    @Test func anAccessUnitWithoutASliceIsLeftUnchanged() {
        let sei = H264SEI.nalUnit([SEIMessage(data: [0x42])])
        let parameters = [0, 0, 1] + Self.sps + [0, 0, 0, 1] + Self.pps
        #expect(H264SEI.inserting(sei, into: parameters) == parameters)
        #expect(H264SEI.inserting(sei, into: []) == [])
        #expect(H264SEI.inserting(sei, into: Self.idr) == Self.idr, "not Annex B")
    }

    @Test func messagesAreReadFromEverySEIUnitOfAnAccessUnit() {
        let tagged = TaggedSEIMessage(message: SEIMessage(data: Array("first".utf8)), tag: SEITag(sequence: 9, sentAtMilliseconds: 10))
        let second = TaggedSEIMessage(message: SEIMessage(payloadType: 5, uuid: Self.uuid, data: [0, 0, 1]))
        let x264 = SEIMessage(payloadType: 5, uuid: H264SEI.x264UUID, data: Array("x264".utf8))
        let accessUnit = Self.annexB([
            Self.aud, Self.sps, Self.pps, H264SEI.nalUnit([x264]), H264SEI.nalUnit([tagged]), Self.idr, H264SEI.nalUnit([second.message]),
        ])
        #expect(H264SEI.messages(inAccessUnit: accessUnit) == [tagged, second])
        #expect(H264SEI.messages(inAccessUnit: Self.annexB([Self.sps, Self.pps, Self.idr])).isEmpty)
        #expect(H264SEI.messages(inAccessUnit: H264SEI.nalUnit([second.message])).isEmpty, "not Annex B")
    }
}
