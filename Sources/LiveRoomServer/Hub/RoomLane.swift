import Dispatch
import NIOCore
import Synchronization

/// One room's lane on the process's shared thread pool: the work of the room's connections
/// (handling their frames, writing their messages) and of its shop runs here, one job at a
/// time in the order it came; their reading runs on the room's ``reading`` lane. The lane has
/// at most one slice of work queued in the pool at a time, so a room with thousands of jobs
/// waiting (a flash sale) delays another room's job by at most a slice (``sliceJobs``), where
/// the pool alone would run every job queued before it.
///
/// The room's actor (``Room``) has a lane of its own (``RoomActorExecutor``): the room's state
/// changes and its connections' frames are handled side by side, each in order, and each takes
/// its turns with the other rooms' lanes.
final class RoomLane: TaskExecutor, Sendable {
    /// The lane the room's connections read their frames on (pongs included), beside this one:
    /// a room with thousands of frames to read takes turns with the other rooms' reading too,
    /// and a frame waits for no work of its room to be read. Nil on a reading lane itself.
    let reading: RoomLane?
    /// Jobs waiting, each with the executor it runs as (its connection's, or the lane's own),
    /// and whether a slice is queued in the pool or running.
    private let state = Mutex((jobs: CircularBuffer<Waiting>(), scheduled: false))
    /// The most jobs one slice runs before the lane queues itself again behind the others.
    static let sliceJobs = 16

    init() { reading = RoomLane(readingLaneOf: ()) }

    private init(readingLaneOf: Void) { reading = nil }

    /// A lane without a reading lane beside it, for a room's actor (``RoomActorExecutor``).
    static func forActor() -> RoomLane { RoomLane(readingLaneOf: ()) }

    struct Waiting: @unchecked Sendable {
        var job: UnownedJob
        var executor: UnownedTaskExecutor
        /// The room actor's executor, for the actor's jobs.
        var isolation: UnownedSerialExecutor?

        func run() {
            if let isolation {
                job.runSynchronously(isolatedTo: isolation, taskExecutor: executor)
            } else {
                job.runSynchronously(on: executor)
            }
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        add(UnownedJob(job), runningAs: asUnownedTaskExecutor())
    }

    /// Queues `job` to run as `executor` (the executor its task prefers, so that the job is not
    /// handed on again when it runs).
    func add(_ job: UnownedJob, runningAs executor: UnownedTaskExecutor, isolatedTo isolation: UnownedSerialExecutor? = nil) {
        let schedules = state.withLock { state in
            state.jobs.append(Waiting(job: job, executor: executor, isolation: isolation))
            defer { state.scheduled = true }
            return !state.scheduled
        }
        if schedules { DispatchQueue.global().async { self.runSlice() } }
    }

    /// Runs up to ``sliceJobs`` jobs, then queues the next slice at the back of the pool's queue.
    private func runSlice() {
        for _ in 0..<Self.sliceJobs {
            let next = state.withLock { state -> Waiting? in
                if let next = state.jobs.popFirst() { return next }
                state.scheduled = false
                return nil
            }
            guard let next else { return }
            next.run()
        }
        let more = state.withLock { state in
            if state.jobs.isEmpty { state.scheduled = false }
            return state.scheduled
        }
        if more { DispatchQueue.global().async { self.runSlice() } }
    }
}

/// The serial executor of a room's actor (``Room``): its jobs run on a lane of their own.
final class RoomActorExecutor: SerialExecutor, Sendable {
    let lane = RoomLane.forActor()

    func enqueue(_ job: consuming ExecutorJob) {
        lane.add(UnownedJob(job), runningAs: lane.asUnownedTaskExecutor(), isolatedTo: asUnownedSerialExecutor())
    }
}

/// The executor a signaling connection's tasks prefer: its room's lane once it has a seat (its
/// reading lane for the task that reads frames), the shared pool before (``Seats`` moves it
/// when the seat changes).
final class ConnectionExecutor: TaskExecutor, Sendable {
    private let current = Mutex<RoomLane?>(nil)
    /// The executor of the task that reads the connection's frames: it follows the room's reading lane.
    let reads: Bool

    init(reads: Bool = false) {
        self.reads = reads
    }

    /// The lane the connection's jobs go to; nil: the shared pool.
    var lane: RoomLane? { current.withLock { reads ? $0?.reading : $0 } }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let me = asUnownedTaskExecutor()
        if let lane {
            lane.add(job, runningAs: me)
        } else {
            let waiting = RoomLane.Waiting(job: job, executor: me)
            DispatchQueue.global().async { [self] in
                withExtendedLifetime(self) { waiting.job.runSynchronously(on: waiting.executor) }
            }
        }
    }

    /// Where the connection's next jobs go.
    func move(to lane: RoomLane?) {
        current.withLock { $0 = lane }
    }
}
