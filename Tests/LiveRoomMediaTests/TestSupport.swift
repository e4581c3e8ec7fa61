import Foundation
import LiveRoomWire
@testable import LiveRoomMedia

/// Helpers shared by the media tests: temporary files, signal analysis.
enum TestSupport {
    /// A fresh path in the temporary directory.
    static func temporaryPath(_ suffix: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("liveroom-media-\(UUID().uuidString)\(suffix)").path
    }

    /// Goertzel power of `frequency` in `samples`, normalised by the length.
    static func goertzelPower(_ samples: [Int16], frequency: Double, sampleRate: Double) -> Double {
        let coefficient = 2 * cos(2 * Double.pi * frequency / sampleRate)
        var s1 = 0.0, s2 = 0.0
        for sample in samples {
            let s0 = Double(sample) + coefficient * s1 - s2
            s2 = s1
            s1 = s0
        }
        let power = s1 * s1 + s2 * s2 - coefficient * s1 * s2
        return power / Double(samples.count * samples.count)
    }

    static func rms(_ samples: [Int16]) -> Double {
        guard !samples.isEmpty else { return 0 }
        return (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)).squareRoot()
    }

    /// Mean absolute luma difference between two equal-size frames.
    static func meanLumaDifference(_ a: VideoFrame, _ b: VideoFrame) -> Double {
        precondition(a.width == b.width && a.height == b.height)
        var total = 0
        for i in 0..<a.y.count { total += abs(Int(a.y[i]) - Int(b.y[i])) }
        return Double(total) / Double(a.y.count)
    }
}

/// Writes bit fields and Exp-Golomb codes, to build SPS test vectors by hand.
struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private var bitCount = 0

    mutating func bit(_ value: Bool) {
        if bitCount % 8 == 0 { bytes.append(0) }
        if value { bytes[bytes.count - 1] |= 0x80 >> UInt8(bitCount % 8) }
        bitCount += 1
    }

    mutating func bits(_ value: UInt32, _ count: Int) {
        for i in stride(from: count - 1, through: 0, by: -1) { bit((value >> UInt32(i)) & 1 == 1) }
    }

    mutating func ue(_ value: UInt32) {
        let code = UInt64(value) + 1
        let length = 64 - code.leadingZeroBitCount
        for _ in 0..<(length - 1) { bit(false) }
        for i in stride(from: length - 1, through: 0, by: -1) { bit((code >> UInt64(i)) & 1 == 1) }
    }

    mutating func se(_ value: Int32) {
        ue(value > 0 ? UInt32(2 * value - 1) : UInt32(-2 * Int64(value)))
    }

    /// rbsp_trailing_bits, then emulation prevention, giving NAL payload bytes.
    mutating func finishedNAL(header: UInt8) -> [UInt8] {
        bit(true)
        while bitCount % 8 != 0 { bit(false) }
        return [header] + H264EmulationPrevention.adding(to: bytes)
    }
}
