import NIOCore
import Testing
@testable import LiveRoomWire

/// A seeded SplitMix64 generator so fuzz-style tests are reproducible.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Builds a buffer from hex text; whitespace is ignored.
func hexBuffer(_ hex: String) -> ByteBuffer {
    ByteBuffer(bytes: hexBytes(hex))
}

func hexBytes(_ hex: String) -> [UInt8] {
    let digits = hex.filter { $0.isHexDigit }
    precondition(digits.count % 2 == 0, "odd hex length")
    var bytes: [UInt8] = []
    var index = digits.startIndex
    while index < digits.endIndex {
        let next = digits.index(index, offsetBy: 2)
        bytes.append(UInt8(digits[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

/// Inputs for totality tests: random buffers, every truncation of each seed, and
/// random byte flips of each seed. Bounded so a debug build runs them in well under a second.
func hostileInputs(seeds: [[UInt8]], randomCount: Int = 1500, mutationsPerSeed: Int = 300, seed: UInt64 = 0x5EED) -> [ByteBuffer] {
    var generator = SeededGenerator(seed: seed)
    var inputs: [ByteBuffer] = []
    for _ in 0..<randomCount {
        let length = Int.random(in: 0...96, using: &generator)
        var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
        // Bias some towards plausible first bytes so deeper code paths are reached.
        if !bytes.isEmpty, Bool.random(using: &generator), let template = seeds.randomElement(using: &generator), !template.isEmpty {
            let keep = min(template.count, Int.random(in: 1...8, using: &generator))
            for index in 0..<min(keep, bytes.count) { bytes[index] = template[index] }
        }
        inputs.append(ByteBuffer(bytes: bytes))
    }
    for template in seeds {
        for length in 0..<template.count {
            inputs.append(ByteBuffer(bytes: template[0..<length]))
        }
        for _ in 0..<mutationsPerSeed where !template.isEmpty {
            var bytes = template
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                bytes[index] = UInt8.random(in: 0...255, using: &generator)
            }
            if Bool.random(using: &generator) {
                bytes.removeLast(Int.random(in: 0...min(8, bytes.count), using: &generator))
            }
            inputs.append(ByteBuffer(bytes: bytes))
        }
    }
    return inputs
}

extension ByteBuffer {
    var bytes: [UInt8] { Array(readableBytesView) }
}
