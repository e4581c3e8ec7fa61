import Testing

@testable import LiveRoomCore

@Suite struct RoomDirectoryTests {
    @Test func countsEachUsersRoomsAndHandsOverItsChangesInOrder() {
        var directory = RoomDirectory()
        directory.seat(1, ("r1", "u"))
        directory.seat(2, ("r2", "u"))
        directory.seat(3, ("r1", "v"))
        #expect(directory.roomCount(of: "u") == 2 && directory.roomCount(of: "v") == 1 && directory.roomCount(of: "w") == 0)
        #expect(directory[2]?.roomId == "r2" && directory[4] == nil)
        // A session that moves keeps its user's count; one that leaves frees a place.
        directory.seat(2, ("r3", "u"))
        directory.seat(1, nil)
        directory.seat(1, nil)
        #expect(directory.roomCount(of: "u") == 1 && directory[1] == nil)
        let changes = directory.takeChanges()
        #expect(changes.map(\.session) == [1, 2, 3, 2, 1, 1])
        #expect(changes.map { $0.seat?.roomId } == ["r1", "r2", "r1", "r3", nil, nil])
        #expect(directory.takeChanges().isEmpty)
        directory.seat(3, nil)
        #expect(directory.roomCount(of: "v") == 0)
    }
}
