import Testing
@testable import LiveRoomWire

@Suite("SEI messages, LiveRoom's tag and hex text")
struct SEIMessageTests {
    @Test func allowedPayloadTypesAre5And100To254Except244() {
        let allowed = (-1...300).filter(SEIMessage.isAllowedPayloadType)
        #expect(allowed == [5] + Array(100...243) + Array(245...254))
        #expect(SEIMessage.isAllowedPayloadType(SEIMessage.defaultPayloadType))
        #expect(SEIMessage.defaultPayloadType == 242)
    }

    @Test func payloadIsTheUUIDThenTheData() {
        #expect(SEIMessage(data: [1, 2]).payload == [1, 2])
        let uuid: [UInt8] = Array(0x10...0x1F)
        #expect(SEIMessage(payloadType: 5, uuid: uuid, data: [0xAA]).payload == uuid + [0xAA])
        #expect(SEIMessage.defaultUUID.count == 16)
        #expect(SEITag.uuid.count == 16)
        #expect(SEITag.uuid != SEIMessage.defaultUUID)
    }

    @Test func tagIsAPayloadType5MessageWithBigEndianFields() {
        let message = SEITag(sequence: 0x0102_0304, sentAtMilliseconds: 0x1122_3344_5566_7788).message
        #expect(message.payloadType == 5)
        #expect(message.uuid == Array("LiveRoomSEITag01".utf8))
        #expect(message.data == [1, 0x01, 0x02, 0x03, 0x04, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88])
    }

    @Test(arguments: [
        SEITag(sequence: 0, sentAtMilliseconds: 0),
        SEITag(sequence: 1, sentAtMilliseconds: 1_700_000_000_123),
        SEITag(sequence: .max, sentAtMilliseconds: .max),
        SEITag(sequence: 0x8000_0001, sentAtMilliseconds: 0x8000_0000_0000_0001),
    ])
    func tagRoundTrips(tag: SEITag) {
        #expect(SEITag(tag.message) == tag)
    }

    @Test func messagesThatAreNotTagsAreNotTakenForOne() {
        let tag = SEITag(sequence: 7, sentAtMilliseconds: 9).message
        #expect(SEITag(tag) != nil)
        // Same bytes under another payload type, or without the UUID.
        #expect(SEITag(SEIMessage(payloadType: 242, uuid: tag.uuid, data: tag.data)) == nil)
        #expect(SEITag(SEIMessage(payloadType: 242, data: tag.payload)) == nil)
        #expect(SEITag(SEIMessage(payloadType: 5, uuid: nil, data: tag.payload)) == nil)
        // Another UUID.
        #expect(SEITag(SEIMessage(payloadType: 5, uuid: SEIMessage.defaultUUID, data: tag.data)) == nil)
        // A byte short, a byte long, another version.
        #expect(SEITag(SEIMessage(payloadType: 5, uuid: SEITag.uuid, data: Array(tag.data.dropLast()))) == nil)
        #expect(SEITag(SEIMessage(payloadType: 5, uuid: SEITag.uuid, data: tag.data + [0])) == nil)
        #expect(SEITag(SEIMessage(payloadType: 5, uuid: SEITag.uuid, data: [2] + tag.data.dropFirst())) == nil)
        #expect(SEITag(SEIMessage(payloadType: 5, uuid: SEITag.uuid, data: [])) == nil)
    }

    @Test func hexStringIsLowercaseWithoutSeparators() {
        #expect([UInt8]().hexString == "")
        #expect([0x4C, 0x52].hexString == "4c52")
        #expect([0x00, 0x0F, 0xF0, 0xFF, 0xAB].hexString == "000ff0ffab")
        #expect((0...255).map { UInt8($0) }.hexString.count == 512)
        #expect((0...255).map { UInt8($0) }.hexString.hasSuffix("fcfdfeff"))
    }
}
