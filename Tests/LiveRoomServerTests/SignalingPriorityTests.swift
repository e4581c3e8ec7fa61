import Glibc
import NIOCore
import NIOPosix
import Testing

@testable import LiveRoomServer

@Suite struct SignalingPriorityTests {
    /// The loop's own thread takes the nice value when the process may lower it (root, as CI
    /// runs), and keeps 0 otherwise; the calling thread is left alone either way.
    @Test func aLoopsThreadTakesTheNiceValueWhenAllowed() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let before = SignalingPriority.ownNice()
        let took = await SignalingPriority.apply(-5, to: [loop])
        let nice = try await loop.submit { SignalingPriority.ownNice() }.get()
        if geteuid() == 0 {
            #expect(took == 1 && nice == -5)
        } else {
            #expect(took == 0 && nice == 0)
        }
        #expect(SignalingPriority.ownNice() == before)
        try await group.shutdownGracefully()
    }
}
