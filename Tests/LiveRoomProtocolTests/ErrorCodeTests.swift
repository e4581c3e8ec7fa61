import LiveRoomProtocol
import Testing

/// Codes a client written for TRTC checks by number: pinned here as numbers, so a change of a
/// constant cannot pass the tests that compare with the constant.
@Suite struct ErrorCodeTests {
    @Test func pkAndRoomCodesAreTRTCsNumbers() {
        let pinned: [(Int, Int, String)] = [
            (ErrorCode.pkRequestTimeout, -3326, "ERR_ROOM_REQUEST_CONN_ROOM_TIMEOUT"),
            (ErrorCode.pkInvalidParameter, -3328, "ERR_ROOM_REQUEST_CONN_ROOM_INVALID_PARAM"),
            (ErrorCode.pkCallerIsAudience, -3330, "ERR_CONNECT_OTHER_ROOM_AS_AUDIENCE"),
            (ErrorCode.tooManyPKRooms, -102032, "ERR_SERVER_CENTER_CONN_ROOM_REACH_MAX_NUM"),
            (ErrorCode.pkNotConnected, -102042, "ERR_SERVER_CENTER_CONN_ROOM_NOT_CONNED"),
            (ErrorCode.pkRejected, -102044, "ERR_SERVER_CENTER_CONN_ROOM_FAILED"),
            (ErrorCode.pkRoomNotFound, -102046, "ERR_SERVER_CENTER_CONN_ROOM_CONNED_ROOM_NOT_EXIST"),
            (ErrorCode.pkPeerRoomFull, -102047, "ERR_SERVER_CENTER_CONN_ROOM_CONNED_REACH_MAX_ROOM"),
            (ErrorCode.pkUserNotFound, -102048, "ERR_SERVER_CENTER_CONN_ROOM_CONNED_USER_NOT_EXIST"),
            (ErrorCode.reconnectFailed, -3308, "ERR_TRTC_REQUEST_ENTER_ROOM_TIMEOUT"),
            (ErrorCode.enterRoomRefused, -3340, "ERR_TRTC_ENTER_ROOM_REFUSED"),
            (ErrorCode.invalidUserId, -3319, "ERR_TRTC_INVALID_USER_ID"),
        ]
        for (constant, number, name) in pinned { #expect(constant == number, "\(name)") }
    }
}
