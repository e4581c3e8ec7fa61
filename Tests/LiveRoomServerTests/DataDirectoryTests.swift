import Foundation
import Logging
import Testing

@testable import LiveRoomServer

@Suite struct DataDirectoryTests {
    static func mode(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    @Test func theDataDirectoryAndTheDatabaseAreTheServersUsersOnly() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("liveroom-data-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let directory = root.appendingPathComponent("data").path
        let server = LiveRoomServer(configuration: .init(dataDirectory: directory), logger: Logger(label: "data-directory-test"))
        let (_, credentials) = try server.prepare()
        #expect(credentials.isDevelopment)
        #expect(try Self.mode(directory) == 0o700)
        #expect(try Self.mode(directory + "/liveroom.sqlite") == 0o600)

        // A directory and database left readable by an older version are tightened at start.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: directory + "/liveroom.sqlite")
        let (_, again) = try server.prepare()
        #expect(again.secretKey == credentials.secretKey)
        #expect(try Self.mode(directory) == 0o700)
        #expect(try Self.mode(directory + "/liveroom.sqlite") == 0o600)
    }
}
