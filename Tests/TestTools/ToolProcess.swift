import Foundation
import Synchronization

/// A run of a ``RequiredTool`` with no input. Its standard output and error are each collected
/// by a thread of their own as the tool writes them, so a chatty tool never blocks on a full
/// pipe. A tool still running when its `ToolProcess` goes away is killed.
public final class ToolProcess: Sendable {
    private let process: Process
    private let standardOutput = Collected()
    private let standardError = Collected()

    /// Starts `tool` with `arguments`.
    public init(_ tool: RequiredTool, _ arguments: [String]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: tool.path)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        standardOutput.read(output.fileHandleForReading)
        standardError.read(errors.fileHandleForReading)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    public var isRunning: Bool { process.isRunning }
    /// What the tool wrote to standard output so far.
    public var output: Data { standardOutput.data }
    /// What the tool wrote to standard error so far, as text.
    public var errors: String { String(decoding: standardError.data, as: UTF8.self) }

    /// Waits for the tool to end and for all its output; returns its exit status, or nil if it
    /// was still running after `timeout` (nil: no limit) and was killed.
    public func wait(timeout: Duration? = nil) -> Int32? {
        var killed = false
        if let timeout {
            let deadline = ContinuousClock.now + timeout
            while process.isRunning, ContinuousClock.now < deadline { usleep(20_000) }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                killed = true
            }
        }
        process.waitUntilExit()
        while !standardOutput.isFinished || !standardError.isFinished { usleep(5_000) }
        return killed ? nil : process.terminationStatus
    }
}

/// How a tool run to the end ended and what it wrote.
public struct ToolOutput: Sendable {
    /// The exit status.
    public var status: Int32
    /// Everything written to standard output.
    public var output: Data
    /// Everything written to standard error, as text.
    public var errors: String
}

/// Something a test waited for did not happen in time.
public struct TimedOut: Error, CustomStringConvertible {
    public var description: String

    public init(description: String) {
        self.description = description
    }
}

extension RequiredTool {
    /// Runs the tool with `arguments` to the end and collects what it wrote. With a `timeout`,
    /// a tool still running after it is killed and ``TimedOut`` is thrown.
    public func run(_ arguments: [String], timeout: Duration? = nil) throws -> ToolOutput {
        let process = try ToolProcess(self, arguments)
        guard let status = process.wait(timeout: timeout) else {
            throw TimedOut(description: "\(path) \(arguments.joined(separator: " ")) did not finish in \(timeout.map { "\($0)" } ?? "time")")
        }
        return ToolOutput(status: status, output: process.output, errors: process.errors)
    }
}

/// The bytes read from one pipe, until it closes.
private final class Collected: Sendable {
    private let state = Mutex((data: Data(), isFinished: false))

    var data: Data { state.withLock { $0.data } }
    var isFinished: Bool { state.withLock { $0.isFinished } }

    /// Reads `handle` to its end on a new thread.
    func read(_ handle: FileHandle) {
        Thread { [self] in
            while true {
                let chunk = handle.availableData
                state.withLock {
                    $0.data.append(chunk)
                    if chunk.isEmpty { $0.isFinished = true }
                }
                if chunk.isEmpty { return }
            }
        }.start()
    }
}
