// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "LiveRoom",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "liveroom-server", targets: ["liveroom-server"]),
        .executable(name: "liveroom", targets: ["liveroom"]),
        .library(name: "LiveRoomAuth", targets: ["LiveRoomAuth"]),
        .library(name: "LiveRoomProtocol", targets: ["LiveRoomProtocol"]),
        .library(name: "LiveRoomCore", targets: ["LiveRoomCore"]),
        .library(name: "LiveRoomClientKit", targets: ["LiveRoomClientKit"]),
        .library(name: "LiveRoomWire", targets: ["LiveRoomWire"]),
        .library(name: "LiveRoomPublishTasks", targets: ["LiveRoomPublishTasks"]),
        .library(name: "LiveRoomAdmin", targets: ["LiveRoomAdmin"]),
        // For the fuzz targets in FuzzTesting/, which drive the media port (MediaPortHarness).
        .library(name: "LiveRoomServer", targets: ["LiveRoomServer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0", traits: ["JSON", "YAML"]),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
    ],
    targets: [
        // C libraries, one system module each, with shims for macros and variadic calls.
        .systemLibrary(name: "CSRTP", path: "Sources/CSRTP", pkgConfig: "libsrtp2", providers: [.apt(["libsrtp2-dev"])]),
        .systemLibrary(name: "COpus", path: "Sources/COpus", pkgConfig: "opus", providers: [.apt(["libopus-dev"])]),
        .systemLibrary(name: "CVPX", path: "Sources/CVPX", pkgConfig: "vpx", providers: [.apt(["libvpx-dev"])]),
        .systemLibrary(
            name: "CFFmpeg", path: "Sources/CFFmpeg", pkgConfig: "libavformat",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswscale-dev", "libswresample-dev"])]),
        .systemLibrary(name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),

        // UserSig (TLSSigAPIv2) generation and verification.
        .target(name: "LiveRoomAuth", dependencies: [
            "CZlib",
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // The signaling protocol (pure, Foundation only): JSON values and the one JSON field reader,
        // signaling requests, server events, every error code.
        .target(name: "LiveRoomProtocol"),
        // Pure room core: rooms, roles, mic-connection, room messages.
        .target(name: "LiveRoomCore", dependencies: ["LiveRoomProtocol", "LiveRoomAuth"]),
        // Live shopping (pure): products and prices, the catalogue's rules, pop-up messages.
        .target(name: "LiveRoomCommerce", dependencies: ["LiveRoomProtocol"]),
        // SQLite storage (GRDB): settings, room history, catalogues.
        .target(name: "LiveRoomStore", dependencies: [
            "LiveRoomCore", "LiveRoomCommerce", "LiveRoomProtocol", "LiveRoomWebhooks",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        // The admin REST API's requests (pure): each action read and range-checked.
        .target(name: "LiveRoomAdmin", dependencies: ["LiveRoomProtocol", "LiveRoomCore", "LiveRoomPublishTasks"]),
        .target(name: "LiveRoomWebhooks", dependencies: [
            "LiveRoomCore", "LiveRoomProtocol", "LiveRoomCommerce",
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // Cluster mode (issue 16), pure: the nodes, their liveness and load, the rooms' home
        // nodes, the ClusterStore protocol that keeps them, and NodeMessage, everything one node
        // tells another.
        .target(name: "LiveRoomCluster", dependencies: ["LiveRoomProtocol", "LiveRoomCore", "LiveRoomPublishTasks"]),
        // PostgreSQL (postgres-nio): the cluster's ClusterStore and the shop every node shares
        // (catalogues, orders, battles, room history, the webhook outbox), behind the same
        // protocols as LiveRoomStore's SQLite; the --cluster-db URL.
        .target(name: "LiveRoomPostgres", dependencies: [
            "LiveRoomCluster", "LiveRoomCommerce", "LiveRoomProtocol", "LiveRoomCore", "LiveRoomWebhooks",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The room server: WebSocket signaling, admin REST, services.
        .target(name: "LiveRoomServer", dependencies: [
            "LiveRoomAdmin", "LiveRoomAuth", "LiveRoomCore", "LiveRoomProtocol", "LiveRoomStore", "LiveRoomSFU", "LiveRoomTransport", "LiveRoomSecureTransport", "LiveRoomWire",
            "LiveRoomPublishTasks", "LiveRoomTaskRunner", "LiveRoomMedia", "LiveRoomCommerce", "LiveRoomWebhooks", "LiveRoomCluster",
            "LiveRoomPostgres", "LiveRoomRTP",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOWebSocket", package: "swift-nio"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "Configuration", package: "swift-configuration"),
            .product(name: "Yams", package: "Yams"),
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
        ], resources: [
            // The watch page (WatchRoutes): compiled into the binary as byte arrays (PackageResources).
            .embedInCode("Web/watch.html"), .embedInCode("Web/watch.css"), .embedInCode("Web/watch.js"),
            .embedInCode("Web/signaling.js"), .embedInCode("Web/whep.js"), .embedInCode("Web/sei.js"),
        ]),
        // WebRTC wire formats: STUN, RTP/RTCP, SDP, VP8/H.264 payloads (pure, no I/O).
        .target(name: "LiveRoomWire", dependencies: [
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // The RTP session toolkit shared by the SFU, the client and the task runner: send history,
        // receive statistics, keyframe-request limiting, outbound streams, sequence rewriting,
        // frame assembly and keyframe detection per payload format.
        .target(name: "LiveRoomRTP", dependencies: [
            "LiveRoomWire",
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
        // The SFU: routes publishers' RTP to subscribers with sequence rewriting, NACK, PLI.
        .target(name: "LiveRoomSFU", dependencies: [
            "LiveRoomWire", "LiveRoomRTP", "LiveRoomTransport", "LiveRoomSecureTransport",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // Media: frames, synthetic and file sources, VP8/H.264/Opus codecs, Matroska recording.
        .target(name: "LiveRoomMedia", dependencies: [
            "COpus", "CVPX", "CFFmpeg", "LiveRoomRTP", "LiveRoomWire",
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
        // DTLS-SRTP for WebRTC: certificates and fingerprints, the DTLS 1.2 handshake over memory BIOs, SRTP sessions.
        .target(name: "LiveRoomSecureTransport", dependencies: ["COpenSSL", "CSRTP"]),
        // Peer connection transport: ICE-lite, media port demultiplexing.
        .target(name: "LiveRoomTransport", dependencies: [
            "LiveRoomWire", "LiveRoomSecureTransport",
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
        // Publish media stream tasks (pure): TRTC mixing config, layout math, the task state machines (one task; every task of the server).
        .target(name: "LiveRoomPublishTasks", dependencies: ["LiveRoomProtocol", "LiveRoomWire"]),
        // Runs publish media stream tasks: decodes inputs, composes, encodes, pushes FLV over RTMP.
        .target(name: "LiveRoomTaskRunner", dependencies: [
            "LiveRoomPublishTasks", "LiveRoomProtocol", "LiveRoomMedia", "LiveRoomRTP", "LiveRoomWire",
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
        // The client kit behind the `liveroom` command line.
        .target(name: "LiveRoomClientKit", dependencies: [
            "LiveRoomAuth", "LiveRoomProtocol", "LiveRoomTransport", "LiveRoomMedia", "LiveRoomRTP", "LiveRoomWire", "LiveRoomSecureTransport",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "Logging", package: "swift-log"),
        ]),

        .executableTarget(name: "liveroom-server", dependencies: [
            "LiveRoomServer",
            .product(name: "Logging", package: "swift-log"),
        ], path: "Server"),
        .executableTarget(name: "liveroom", dependencies: [
            "LiveRoomClientKit",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], path: "Client"),

        .executableTarget(name: "codec-bench", dependencies: [
            "LiveRoomMedia",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], path: "Benchmarks/codec-bench"),
        .executableTarget(name: "mix-bench", dependencies: [
            "LiveRoomMedia", "LiveRoomPublishTasks", "LiveRoomTaskRunner", "LiveRoomWire",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], path: "Benchmarks/mix-bench"),
        .executableTarget(name: "srtp-bench", dependencies: [
            "LiveRoomSecureTransport",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], path: "Benchmarks/srtp-bench"),
        // What the benches that run a server share: the server process, timeouts, percentiles; the
        // clients: signaling sessions, client peer transports, event loops, the pre-encoded publisher.
        .target(name: "BenchSupport", dependencies: [
            "LiveRoomAuth", "LiveRoomMedia", "LiveRoomProtocol", "LiveRoomSecureTransport", "LiveRoomTransport", "LiveRoomWire",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "Logging", package: "swift-log"),
        ], path: "Benchmarks/BenchSupport"),
        .executableTarget(name: "sfu-bench", dependencies: [
            "BenchSupport", "PostgresTestSupport", "LiveRoomTransport", "LiveRoomWire", "LiveRoomSecureTransport", "LiveRoomMedia", "LiveRoomAuth", "LiveRoomProtocol",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], path: "Benchmarks/sfu-bench"),
        .executableTarget(name: "join-bench", dependencies: [
            "BenchSupport", "LiveRoomRTP", "LiveRoomTransport", "LiveRoomWire", "LiveRoomSecureTransport", "LiveRoomMedia", "LiveRoomProtocol",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], path: "Benchmarks/join-bench"),
        .executableTarget(name: "shop-bench", dependencies: [
            "BenchSupport", "PostgresTestSupport", "LiveRoomAuth", "LiveRoomProtocol", "LiveRoomCommerce", "LiveRoomStore", "LiveRoomClientKit",
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], path: "Benchmarks/shop-bench"),

        .testTarget(name: "CLibraryTests", dependencies: ["CSRTP", "COpus", "CVPX", "CFFmpeg", "COpenSSL"]),
        .testTarget(name: "LiveRoomAuthTests", dependencies: ["LiveRoomAuth"]),
        .testTarget(name: "LiveRoomProtocolTests", dependencies: ["LiveRoomProtocol", "TestTools"]),
        .testTarget(name: "LiveRoomCoreTests", dependencies: ["LiveRoomCore", "LiveRoomProtocol"]),
        .testTarget(name: "LiveRoomStoreTests", dependencies: ["LiveRoomStore", "LiveRoomCommerce", "LiveRoomProtocol", "ShopStoreChecks"]),
        .testTarget(name: "LiveRoomCommerceTests", dependencies: ["LiveRoomCommerce", "LiveRoomProtocol"]),
        .testTarget(name: "LiveRoomWireTests", dependencies: [
            "LiveRoomWire",
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
        .testTarget(name: "LiveRoomTransportTests", dependencies: [
            "LiveRoomTransport", "LiveRoomWire",
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
        // The external programs tests run, and the trait that skips (or, under scripts/test.sh and CI, fails) a test without them.
        .target(name: "TestTools", path: "Tests/TestTools"),
        // A real RTMP server (nginx with libnginx-mod-rtmp) for tests.
        .target(name: "RTMPTestSupport", dependencies: ["TestTools"], path: "Tests/RTMPTestSupport"),
        // A real PostgreSQL server (Debian's postgresql) for the cluster tests.
        .target(name: "PostgresTestSupport", dependencies: ["TestTools"], path: "Tests/PostgresTestSupport"),
        // The behaviours every shop store must have, run against SQLite and PostgreSQL.
        .target(name: "ShopStoreChecks", dependencies: ["LiveRoomCommerce", "LiveRoomProtocol"], path: "Tests/ShopStoreChecks"),
        .testTarget(name: "LiveRoomMediaTests", dependencies: [
            "LiveRoomMedia", "LiveRoomWire", "RTMPTestSupport", "TestTools",
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
        .testTarget(name: "LiveRoomSecureTransportTests", dependencies: [
            "LiveRoomSecureTransport", "CSRTP",
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        .testTarget(name: "LiveRoomRTPTests", dependencies: [
            "LiveRoomRTP", "LiveRoomWire",
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
        .testTarget(name: "LiveRoomSFUTests", dependencies: [
            "LiveRoomSFU", "LiveRoomRTP", "LiveRoomTransport", "LiveRoomWire", "LiveRoomSecureTransport",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        .testTarget(name: "LiveRoomClientKitTests", dependencies: ["LiveRoomClientKit", "LiveRoomProtocol"]),
        .testTarget(name: "LiveRoomPublishTasksTests", dependencies: ["LiveRoomPublishTasks", "LiveRoomProtocol"]),
        .testTarget(name: "LiveRoomClusterTests", dependencies: [
            "LiveRoomCluster", "LiveRoomPostgres", "LiveRoomWebhooks", "PostgresTestSupport", "TestTools", "ShopStoreChecks", "LiveRoomCommerce", "LiveRoomProtocol", "LiveRoomStore",
            "LiveRoomCore", .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "LiveRoomAdminTests", dependencies: ["LiveRoomAdmin", "LiveRoomProtocol"]),
        .testTarget(name: "LiveRoomWebhooksTests", dependencies: [
            "LiveRoomWebhooks", "LiveRoomCore", "LiveRoomProtocol", "LiveRoomCommerce", "LiveRoomStore",
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        .testTarget(name: "LiveRoomTaskRunnerTests", dependencies: [
            "LiveRoomTaskRunner", "LiveRoomPublishTasks", "LiveRoomProtocol", "LiveRoomMedia", "LiveRoomWire", "TestTools",
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
        .testTarget(name: "LiveRoomServerTests", dependencies: [
            "LiveRoomServer", "LiveRoomAuth", "LiveRoomCluster", "LiveRoomCore", "LiveRoomProtocol", "LiveRoomPublishTasks", "LiveRoomSFU", "LiveRoomStore", "LiveRoomTransport",
            "LiveRoomSecureTransport", "LiveRoomWire", "TestTools",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOWebSocket", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
        ]),
        .testTarget(name: "EndToEndTests", dependencies: [
            "PostgresTestSupport", "LiveRoomAuth", "LiveRoomProtocol", "LiveRoomTransport", "LiveRoomMedia", "LiveRoomRTP", "LiveRoomWire", "LiveRoomSecureTransport",
            "LiveRoomSFU",
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
    ]
)
