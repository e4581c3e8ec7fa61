// swift-tools-version:6.2
// libFuzzer targets for LiveRoom's parsers; `bash run.sh [seconds]` builds and runs each.
// A crash it finds becomes a unit test in the main package.
import PackageDescription

let package = Package(
    name: "FuzzTesting",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "LiveRoom", path: ".."),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
    ],
    targets: [
        .target(name: "FuzzSupport"),
        .executableTarget(name: "FuzzSignalingRequest", dependencies: ["FuzzSupport", .product(name: "LiveRoomProtocol", package: "LiveRoom")]),
        .executableTarget(name: "FuzzServerEvent", dependencies: ["FuzzSupport", .product(name: "LiveRoomProtocol", package: "LiveRoom")]),
        .executableTarget(name: "FuzzUserSig", dependencies: ["FuzzSupport", .product(name: "LiveRoomAuth", package: "LiveRoom")]),
        .executableTarget(name: "FuzzPrivateMapKey", dependencies: ["FuzzSupport", .product(name: "LiveRoomAuth", package: "LiveRoom")]),
        .executableTarget(name: "FuzzWire", dependencies: [
            "FuzzSupport",
            .product(name: "LiveRoomWire", package: "LiveRoom"),
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
        .executableTarget(name: "FuzzPublishTaskConfig", dependencies: [
            "FuzzSupport", .product(name: "LiveRoomPublishTasks", package: "LiveRoom"), .product(name: "LiveRoomProtocol", package: "LiveRoom"),
        ]),
        .executableTarget(name: "FuzzAdminRequest", dependencies: [
            "FuzzSupport", .product(name: "LiveRoomAdmin", package: "LiveRoom"), .product(name: "LiveRoomProtocol", package: "LiveRoom"),
        ]),
        .executableTarget(name: "FuzzMediaPort", dependencies: ["FuzzSupport", .product(name: "LiveRoomServer", package: "LiveRoom")]),
        .executableTarget(name: "FuzzICETCPAndRelay", dependencies: ["FuzzSupport", .product(name: "LiveRoomServer", package: "LiveRoom")]),
        .executableTarget(name: "FuzzClientCommand", dependencies: ["FuzzSupport", .product(name: "LiveRoomClientKit", package: "LiveRoom")]),
    ]
)
