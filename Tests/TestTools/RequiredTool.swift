import Foundation

/// An external program some tests run (ffmpeg, nginx with the RTMP module, GStreamer's
/// webrtcbin, Chromium), and the Debian packages that provide it. `scripts/install-deps.sh` installs all
/// of them; a test names what it runs with the ``Testing/Trait/requires(_:)`` trait.
public struct RequiredTool: Sendable {
    /// What the program is, as a failure or skip message names it.
    public let name: String
    /// The Debian packages that provide it, separated by spaces.
    public let packages: String
    /// The executable to run.
    public let path: String
    /// Whether the program and everything it needs are installed; checked once.
    public let isInstalled: Bool
    /// Whether installing packages is enough; false for what the machine must allow (root).
    public let installable: Bool

    init(
        name: String, packages: String, path: String, installable: Bool = true,
        isInstalled: (String) -> Bool = { FileManager.default.isExecutableFile(atPath: $0) }
    ) {
        self.name = name
        self.packages = packages
        self.path = path
        self.installable = installable
        self.isInstalled = isInstalled(path)
    }

    /// Whether this is CI (`CI=true`), where every test must run.
    public static let isCI = ProcessInfo.processInfo.environment["CI"] == "true"

    /// Network namespaces and veth pairs (`ip netns`), which need root: tests that put the
    /// server and clients on real interfaces. CI runs as root; under scripts/test.sh a run that is
    /// not root fails them, elsewhere they are skipped.
    public static let networkNamespaces = RequiredTool(
        name: "network namespaces (root and ip netns)", packages: "iproute2", path: onPath("ip"), installable: false
    ) { ip in
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: ip) else { return false }
        let name = "lr-probe-\(getpid())"
        func run(_ arguments: [String]) -> Bool {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: ip)
            process.arguments = arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            guard (try? process.run()) != nil else { return false }
            process.waitUntilExit()
            return process.terminationStatus == 0
        }
        guard run(["netns", "add", name]) else { return false }
        return run(["netns", "del", name])
    }

    /// Whether a missing tool fails the test rather than skipping it: under `scripts/test.sh`
    /// (which exports `LIVEROOM_REQUIRE_TOOLS=1` after installing every tool) and under CI
    /// (`CI=true`), a test that checked nothing must not pass.
    public static let missingFails: Bool = {
        let environment = ProcessInfo.processInfo.environment
        return environment["LIVEROOM_REQUIRE_TOOLS"] == "1" || environment["CI"] == "true"
    }()

    /// nftables, for firewall rules a test installs inside a network namespace it made (dropping
    /// UDP, as a corporate firewall does).
    public static let nftables = RequiredTool(name: "nftables", packages: "nftables", path: "/usr/sbin/nft")

    public static let ffmpeg = RequiredTool(name: "ffmpeg", packages: "ffmpeg", path: onPath("ffmpeg"))
    public static let ffprobe = RequiredTool(name: "ffprobe", packages: "ffmpeg", path: onPath("ffprobe"))

    /// The RTMP module Debian's `libnginx-mod-rtmp` installs, which `NginxRTMPServer` loads.
    public static let rtmpModulePath = "/usr/lib/nginx/modules/ngx_rtmp_module.so"
    /// Debian's nginx with the RTMP module: a real RTMP server for publishing tests.
    public static let nginxRTMP = RequiredTool(name: "nginx with the RTMP module", packages: "nginx libnginx-mod-rtmp", path: "/usr/sbin/nginx") {
        FileManager.default.isExecutableFile(atPath: $0) && FileManager.default.fileExists(atPath: rtmpModulePath)
    }

    /// Debian's python3 with GStreamer's webrtcbin through python3-gi, for the WHIP and WHEP
    /// interop scripts in `Tests/Interop`; `webrtc_http.py` run by itself checks every element
    /// and binding they use.
    public static let gstreamerWebRTC = RequiredTool(
        name: "GStreamer webrtcbin for python3",
        packages: """
            python3-gi gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0 gir1.2-gst-plugins-bad-1.0 gir1.2-nice-0.1 \
            gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-nice gstreamer1.0-libav
            """,
        path: "/usr/bin/python3"
    ) { python in
        guard FileManager.default.isExecutableFile(atPath: python) else { return false }
        let check = Process()
        check.executableURL = URL(fileURLWithPath: python)
        check.arguments = [interopDirectory.appendingPathComponent("webrtc_http.py").path]
        check.standardInput = FileHandle.nullDevice
        check.standardOutput = FileHandle.nullDevice
        check.standardError = FileHandle.nullDevice
        guard (try? check.run()) != nil else { return false }
        check.waitUntilExit()
        return check.terminationStatus == 0
    }

    /// Debian's Chromium, run headless and driven over its DevTools protocol (the watch page tests).
    public static let chromium = RequiredTool(name: "Chromium", packages: "chromium", path: onPath("chromium"))

    /// Debian's PostgreSQL server (`initdb`, `pg_ctl`, `postgres` in /usr/lib/postgresql/N/bin,
    /// the newest N), which the cluster tests start in a temporary directory.
    public static let postgreSQL = RequiredTool(
        name: "PostgreSQL server", packages: "postgresql", path: postgreSQLBinDirectory + "/pg_ctl"
    ) { pgCtl in
        FileManager.default.isExecutableFile(atPath: pgCtl) && FileManager.default.isExecutableFile(atPath: postgreSQLBinDirectory + "/initdb")
    }

    /// `/usr/lib/postgresql/<newest version>/bin` (which may not exist).
    public static let postgreSQLBinDirectory: String = {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        let newest = versions.compactMap { Int($0) }.max().map(String.init) ?? "15"
        return "/usr/lib/postgresql/\(newest)/bin"
    }()

    /// `Tests/Interop`, where the GStreamer scripts are.
    public static let interopDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Interop")

    /// The first `name` on PATH, or `/usr/bin/name` (which may not exist).
    static func onPath(_ name: String) -> String {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        return directories.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) } ?? "/usr/bin/\(name)"
    }
}
