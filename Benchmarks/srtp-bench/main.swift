// srtp-bench: median cost of SRTP protect and unprotect of a 1200-byte RTP packet, for
// AEAD_AES_128_GCM against the baseline AES_CM_128_HMAC_SHA1_80, and for GCM protect the
// OpenSSL path SRTPSession takes (GCMRTPSealer) against libsrtp2 in the same run.
//
// Usage: srtp-bench [<packets-per-round>] [<rounds>] (defaults 200000 and 5; --help)
// Build with -c release.

import ArgumentParser
import LiveRoomSecureTransport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct Options: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "srtp-bench",
        abstract: "Measures SRTP protect and unprotect of a 1200-byte RTP packet, AEAD_AES_128_GCM against AES_CM_128_HMAC_SHA1_80, and GCM protect on OpenSSL against libsrtp2.")

    @Argument(help: "Packets per round (at least 1000).")
    var packetsPerRound: Int = 200_000
    @Argument(help: "Rounds; the median is reported.")
    var rounds: Int = 5

    func validate() throws {
        guard packetsPerRound >= 1_000 else { throw ValidationError("packets per round must be at least 1000") }
        guard rounds >= 1 else { throw ValidationError("rounds must be at least 1") }
    }
}

let options = Options.parseOrExit()
let packetsPerRound = options.packetsPerRound
let rounds = options.rounds
let packetSize = 1_200
let batchSize = 1_000

struct Figures {
    var protectNanoseconds: [Double] = []
    var unprotectNanoseconds: [Double] = []
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

func nanoseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
}

/// One round: `packetsPerRound` packets, in batches; protect and unprotect are timed separately.
func runRound(
    profile: SRTPProtectionProfile, sender: SRTPSession, receiver: SRTPSession,
    firstSequence: inout UInt32, storage: UnsafeMutableRawBufferPointer
) throws -> (protect: Double, unprotect: Double) {
    let stride = packetSize + SRTPSession.maximumTrailerLength
    var lengths = [Int](repeating: 0, count: batchSize)
    var protectTime = Duration.zero
    var unprotectTime = Duration.zero
    let clock = ContinuousClock()
    var done = 0
    while done < packetsPerRound {
        let count = min(batchSize, packetsPerRound - done)
        // Untimed: fresh plaintext packets with increasing sequence numbers (and ROC).
        for i in 0..<count {
            let packet = UnsafeMutableRawBufferPointer(rebasing: storage[i * stride..<(i + 1) * stride])
            let sequence = firstSequence &+ UInt32(i)
            packet[0] = 0x80
            packet[1] = 96
            packet[2] = UInt8(truncatingIfNeeded: sequence >> 8)
            packet[3] = UInt8(truncatingIfNeeded: sequence)
            packet.storeBytes(of: (sequence &* 960).bigEndian, toByteOffset: 4, as: UInt32.self)
            packet.storeBytes(of: UInt32(0x1234_5678).bigEndian, toByteOffset: 8, as: UInt32.self)
            memset(packet.baseAddress! + 12, Int32(truncatingIfNeeded: sequence), packetSize - 12)
        }
        firstSequence &+= UInt32(count)

        let protectStart = clock.now
        for i in 0..<count {
            let packet = UnsafeMutableRawBufferPointer(rebasing: storage[i * stride..<(i + 1) * stride])
            lengths[i] = try sender.protectRTP(packet, length: packetSize)
        }
        protectTime += clock.now - protectStart

        let unprotectStart = clock.now
        for i in 0..<count {
            let packet = UnsafeMutableRawBufferPointer(rebasing: storage[i * stride..<(i + 1) * stride])
            lengths[i] = try receiver.unprotectRTP(packet, length: lengths[i])
        }
        unprotectTime += clock.now - unprotectStart
        precondition(lengths[count - 1] == packetSize)
        done += count
    }
    return (nanoseconds(protectTime) / Double(packetsPerRound), nanoseconds(unprotectTime) / Double(packetsPerRound))
}

func measure(_ profile: SRTPProtectionProfile, engine: SRTPSession.Engine = .automatic) throws -> Figures {
    var material = [UInt8](repeating: 0, count: SRTPKeyingMaterial.exporterLength(for: profile))
    for i in material.indices { material[i] = UInt8.random(in: 0...255) }
    let client = SRTPKeyingMaterial(profile: profile, role: .client, exportedKeyingMaterial: material)!
    let server = SRTPKeyingMaterial(profile: profile, role: .server, exportedKeyingMaterial: material)!
    let sender = try SRTPSession(keyingMaterial: client, direction: .outbound, engine: engine)
    let receiver = try SRTPSession(keyingMaterial: server, direction: .inbound)

    let storage = UnsafeMutableRawBufferPointer.allocate(
        byteCount: batchSize * (packetSize + SRTPSession.maximumTrailerLength), alignment: 64)
    defer { storage.deallocate() }

    var sequence: UInt32 = 1
    var figures = Figures()
    _ = try runRound(profile: profile, sender: sender, receiver: receiver, firstSequence: &sequence, storage: storage)  // warm-up
    for _ in 0..<rounds {
        let (protect, unprotect) = try runRound(
            profile: profile, sender: sender, receiver: receiver, firstSequence: &sequence, storage: storage)
        figures.protectNanoseconds.append(protect)
        figures.unprotectNanoseconds.append(unprotect)
    }
    return figures
}

func format(_ value: Double) -> String {
    let rounded = (value * 10).rounded() / 10
    return "\(rounded)"
}

print("srtp-bench: \(packetSize)-byte RTP packets, \(packetsPerRound) per round, \(rounds) rounds (+1 warm-up), median ns/packet")
var results: [SRTPProtectionProfile: Figures] = [:]
for profile in [SRTPProtectionProfile.aes128CMHMACSHA1_80, .aeadAES128GCM] {
    let figures = try measure(profile)
    results[profile] = figures
    let protect = median(figures.protectNanoseconds)
    let unprotect = median(figures.unprotectNanoseconds)
    let mbps = Double(packetSize * 8) / protect * 1_000  // Mbit/s of payload per core, protect side
    print(
        "\(profile.openSSLName + String(repeating: " ", count: max(0, 24 - profile.openSSLName.count))) protect \(format(protect)) ns"
            + "  unprotect \(format(unprotect)) ns  (protect ≈ \(Int(mbps)) Mbit/s per core)"
            + "  rounds protect \(figures.protectNanoseconds.map(format)) unprotect \(figures.unprotectNanoseconds.map(format))")
}
let gcmLibsrtp = try measure(.aeadAES128GCM, engine: .libsrtp)
print("SRTP_AEAD_AES_128_GCM    protect with libsrtp2 only: \(format(median(gcmLibsrtp.protectNanoseconds))) ns  rounds \(gcmLibsrtp.protectNanoseconds.map(format))")
let cm = results[.aes128CMHMACSHA1_80]!, gcm = results[.aeadAES128GCM]!
print("GCM protect, OpenSSL path / libsrtp2 (baseline): \(format(median(gcm.protectNanoseconds) / median(gcmLibsrtp.protectNanoseconds) * 100))%")
print(
    "ratio GCM/CM (baseline AES_CM_128_HMAC_SHA1_80): protect \(format(median(gcm.protectNanoseconds) / median(cm.protectNanoseconds) * 100) )%"
        + "  unprotect \(format(median(gcm.unprotectNanoseconds) / median(cm.unprotectNanoseconds) * 100))%")
