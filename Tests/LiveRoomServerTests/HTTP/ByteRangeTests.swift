import Testing

@testable import LiveRoomServer

@Suite struct ByteRangeTests {
    @Test(arguments: [
        (nil, ByteRange.whole),
        ("bytes=0-99", .part(0...99)),
        ("bytes=100-", .part(100...999)),
        ("bytes=-100", .part(900...999)),
        ("bytes=-5000", .part(0...999)),
        ("bytes=900-5000", .part(900...999)),
        ("bytes=1000-", .unsatisfiable),
        ("bytes=1000-2000", .unsatisfiable),
        ("bytes=-0", .unsatisfiable),
        // Not one well-formed range: ignored, the whole file.
        ("bytes=5-1", .whole),
        ("bytes=0-1,5-9", .whole),
        ("items=0-9", .whole),
        ("bytes=a-b", .whole),
        ("bytes=-", .whole),
        ("bytes=99999999999999999999-", .whole),
        ("bytes=+1-2", .whole),
    ])
    func rangesAgainstAThousandBytes(header: String?, expected: ByteRange) {
        #expect(ByteRange.parse(header, size: 1000) == expected, "\(header ?? "nil")")
    }
}
