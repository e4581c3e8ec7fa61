import Foundation
import LiveRoomMedia
import LiveRoomProtocol
import LiveRoomPublishTasks
import TestTools
import Testing

@testable import LiveRoomTaskRunner

/// Images come only from http(s) under the egress policy or from regular files in the image
/// directory; every other way is refused with a reason, fast, without blocking.
@Suite(.serialized, .timeLimit(.minutes(1))) struct ImageLoaderTests {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("images-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func reason(_ loader: ImageLoader, _ url: String) async -> String? {
        do {
            _ = try await loader.load(url)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test(.requires(.ffmpeg)) func filesInTheDirectoryLoadAndNothingElseDoes() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let png = directory.appendingPathComponent("mark.png").path
        _ = try RequiredTool.ffmpeg.run(["-v", "error", "-y", "-f", "lavfi", "-i", "color=c=0xFF00FF:s=64x48", "-frames:v", "1", png])
        try Data("not an image".utf8).write(to: directory.appendingPathComponent("notes.png"))
        try Data(repeating: 0x89, count: ImageReference.maxBytes + 1).write(to: directory.appendingPathComponent("huge.png"))
        try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent("passwd.png").path, withDestinationPath: "/etc/passwd")
        #expect(mkfifo(directory.appendingPathComponent("fifo.png").path, 0o600) == 0)
        let loader = ImageLoader(directory: directory.path, egress: EgressResolver(policy: EgressPolicy()))

        let frame = try await loader.load("mark.png")
        #expect(frame.width == 64 && frame.height == 48)
        let large = directory.appendingPathComponent("large.png").path
        _ = try RequiredTool.ffmpeg.run(["-v", "error", "-y", "-f", "lavfi", "-i", "color=c=red:s=4000x2000", "-frames:v", "1", large])
        let fitted = try await loader.load("large.png")
        #expect(fitted.width * fitted.height <= StreamEncoderParam.maxPixels && fitted.width >= 2 * fitted.height - 2, "scaled down, shape kept")
        let started = ContinuousClock.now
        let cases: [(String, String)] = [
            ("file:///etc/passwd", "not allowed"), ("/etc/passwd", "not allowed"), ("../mark.png", "plain file name"),
            ("sub/../../x.png", "plain file name"), ("passwd.png", "outside the image directory"), ("fifo.png", "not a regular file"),
            ("notes.png", "not a PNG"), ("huge.png", "larger than"), ("missing.png", "no such file"), ("mark.png\n", "plain file name"),
        ]
        for (url, expected) in cases {
            let why = await reason(loader, url)
            #expect(why?.contains(expected) == true, "\(url): \(why ?? "loaded")")
        }
        #expect(ContinuousClock.now - started < .seconds(2), "a FIFO or device never blocks the loader")
        let withoutDirectory = ImageLoader(directory: nil, egress: EgressResolver(policy: EgressPolicy()))
        #expect(await reason(withoutDirectory, "mark.png")?.contains("no image directory") == true)
    }

    @Test func webImagesObeyTheEgressPolicyAndTheirRedirectsToo() async throws {
        // A local HTTP server (allowed for this test) that redirects to the cloud metadata address.
        let script = """
            import http.server, sys
            class H(http.server.BaseHTTPRequestHandler):
                def do_GET(self):
                    if self.path == "/redirect":
                        self.send_response(302); self.send_header("Location", "http://169.254.169.254/latest/meta-data"); self.end_headers()
                    else:
                        self.send_response(200); self.send_header("Content-Length", "4"); self.end_headers(); self.wfile.write(b"text")
                def log_message(self, *args): pass
            server = http.server.HTTPServer(("127.0.0.1", 0), H)
            print(server.server_address[1], flush=True)
            server.serve_forever()
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", script]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            kill(process.processIdentifier, SIGKILL)  // SIGTERM may be blocked in the test process's children
            process.waitUntilExit()
        }
        let port = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)

        let strict = ImageLoader(directory: nil, egress: EgressResolver(policy: EgressPolicy()))
        #expect(await reason(strict, "http://127.0.0.1:\(port)/image.png") == EgressPolicy.refusal)
        #expect(await reason(strict, "http://[::1]:\(port)/image.png") == EgressPolicy.refusal)
        let allowing = ImageLoader(directory: nil, egress: EgressResolver(policy: try EgressPolicy(allow: ["127.0.0.1"])))
        #expect(await reason(allowing, "http://127.0.0.1:\(port)/redirect")?.contains("redirect") == true)
        #expect(await reason(allowing, "http://127.0.0.1:\(port)/image.png")?.contains("not a PNG") == true, "fetched, then checked")
    }
}
