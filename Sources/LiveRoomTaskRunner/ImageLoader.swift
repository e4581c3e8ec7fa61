import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LiveRoomMedia
import LiveRoomProtocol
import LiveRoomPublishTasks
import Synchronization

/// Loads a task's images (placeholders, background, watermarks) off the task's thread, under
/// the server's rules (``ImageReference``): `http(s)` URLs fetched within a size, time and
/// redirect limit and the egress policy, or regular files in the operator's image directory,
/// opened without blocking. Until an image is ready (or when it fails) the task draws the
/// placeholder colour; a failure is reported once per image.
public final class ImageLoader: Sendable {
    enum State: Sendable {
        case loading
        case ready(VideoFrame)
        case failed
    }

    /// The operator's image directory (`--image-dir`), if any.
    public let directory: String?
    /// Where fetches may go.
    public let egress: EgressResolver
    public let timeout: Duration
    public static let maxRedirects = 3
    /// The largest decoded image, in pixels (4096x4096): a small file must not decode to gigabytes.
    public static let maxPixels = 4096 * 4096
    private let states = Mutex<[String: State]>([:])

    public init(directory: String?, egress: EgressResolver, timeout: Duration = .seconds(5)) {
        self.directory = directory
        self.egress = egress
        self.timeout = timeout
    }

    /// The image if it is loaded; otherwise nil, and the first call starts loading it.
    /// `onFailure` hears why an image cannot be used (code -7235).
    public func image(_ url: String, onFailure: @escaping @Sendable (LiveRoomError) -> Void) -> VideoFrame? {
        let state = states.withLock { states -> State? in
            if let state = states[url] { return state }
            states[url] = .loading
            return nil
        }
        switch state {
        case .ready(let frame)?: return frame
        case .loading?, .failed?: return nil
        case nil:
            Task.detached { [self] in
                do {
                    let frame = try await load(url)
                    states.withLock { if $0[url] != nil { $0[url] = .ready(frame) } }
                } catch {
                    states.withLock { if $0[url] != nil { $0[url] = .failed } }
                    onFailure(LiveRoomError(ErrorCode.imageUnavailable, "image \(url.quoted) cannot be used: \(error)"))
                }
            }
            return nil
        }
    }

    /// A reason an image cannot be used, for its owner.
    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Forgets every image but `urls` (those of the task's current config), so the cache stays
    /// as small as one config.
    public func keep(only urls: Set<String>) {
        states.withLock { states in states = states.filter { urls.contains($0.key) } }
    }

    /// Loads and decodes one image.
    func load(_ url: String) async throws -> VideoFrame {
        let bytes: [UInt8]
        switch ImageReference(url, hasImageDirectory: directory != nil) {
        case .refused(let reason): throw Failure(reason)
        case .file(let name): bytes = try readFile(name)
        case .web(let address): bytes = try await fetch(address)
        }
        guard ImageReference.looksLikeImage(bytes) else { throw Failure("it is not a PNG, JPEG, GIF, WebP or BMP image") }
        return try Self.decode(bytes)
    }

    /// A regular file inside the image directory, opened so that a FIFO or device cannot block.
    func readFile(_ name: String) throws -> [UInt8] {
        guard let directory, let root = realpath(directory, nil) else { throw Failure("the image directory does not exist") }
        defer { free(root) }
        let rootPath = String(cString: root)
        guard let resolved = realpath(rootPath + "/" + name, nil) else { throw Failure("no such file in the image directory") }
        defer { free(resolved) }
        let path = String(cString: resolved)
        guard path.hasPrefix(rootPath + "/") else { throw Failure("it points outside the image directory") }
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure("it cannot be opened") }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { throw Failure("it is not a regular file") }
        guard status.st_size <= ImageReference.maxBytes else { throw Failure("it is larger than \(ImageReference.maxBytes) bytes") }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        var total = 0
        while total < bytes.count {
            let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + total, $0.count - total) }
            guard count > 0 else { break }
            total += count
        }
        return Array(bytes.prefix(total))
    }

    /// An `http(s)` GET within the limits; every host on the way (redirects too) must pass the egress policy.
    func fetch(_ url: String) async throws -> [UInt8] {
        guard allowed(url) else { throw Failure(EgressPolicy.refusal) }
        let configuration = URLSessionConfiguration.ephemeral
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        configuration.timeoutIntervalForRequest = seconds
        configuration.timeoutIntervalForResource = seconds
        let delegate = FetchDelegate(allowed: { [self] in allowed($0) })
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        return try await withCheckedThrowingContinuation { continuation in
            delegate.finish = { result in continuation.resume(with: result) }
            session.dataTask(with: URL(string: url)!).resume()
        }
    }

    private func allowed(_ url: String) -> Bool {
        guard let destination = DestinationURL(url), ["http", "https"].contains(destination.scheme) else { return false }
        return egress.allowedAddresses(of: destination.host) != nil
    }

    /// Decodes image bytes through a private temporary file.
    static func decode(_ bytes: [UInt8]) throws -> VideoFrame {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("liveroom-image-\(UUID().uuidString)").path
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600]) else {
            throw Failure("it cannot be decoded (no temporary file)")
        }
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            return try fitted(VideoFrame(contentsOfImageFile: path, maxPixels: maxPixels))
        } catch {
            throw Failure("it does not decode: \(error)")
        }
    }
}

extension ImageLoader {
    /// An image with more pixels than the largest output (1920x1080) scaled down to that many,
    /// keeping its shape: it is never drawn larger, and a task keeps at most a few megabytes per image.
    static func fitted(_ frame: VideoFrame) throws -> VideoFrame {
        let pixels = frame.width * frame.height
        guard pixels > StreamEncoderParam.maxPixels else { return frame }
        let scale = (Double(StreamEncoderParam.maxPixels) / Double(pixels)).squareRoot()
        let width = max(2, Int(Double(frame.width) * scale) & ~1), height = max(2, Int(Double(frame.height) * scale) & ~1)
        let compositor = try VideoCompositor(width: width, height: height)
        try compositor.draw(frame, into: PixelRect(x: 0, y: 0, width: width, height: height))
        return compositor.frame(pts: 0)
    }
}

/// Collects one response body, refusing redirects beyond the limit or the policy and bodies beyond the size.
private final class FetchDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private let allowed: @Sendable (String) -> Bool
    private var body: [UInt8] = []
    private var redirects = 0
    private var failure: String?
    var finish: (@Sendable (Result<[UInt8], any Error>) -> Void)?

    init(allowed: @escaping @Sendable (String) -> Bool) {
        self.allowed = allowed
    }

    private func fail(_ reason: String) {
        lock.withLock { if failure == nil { failure = reason } }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        let count = lock.withLock { redirects += 1; return redirects }
        guard count <= ImageLoader.maxRedirects else {
            fail("more than \(ImageLoader.maxRedirects) redirects")
            return completionHandler(nil)
        }
        guard let next = request.url?.absoluteString, allowed(next) else {
            fail("a redirect to a \(EgressPolicy.refusal)")
            return completionHandler(nil)
        }
        completionHandler(request)
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        if let http = response as? HTTPURLResponse, !(200..<300).contains(http.statusCode) {
            fail("the server answered HTTP \(http.statusCode)")
            return completionHandler(.cancel)
        }
        if response.expectedContentLength > Int64(ImageReference.maxBytes) {
            fail("it is larger than \(ImageReference.maxBytes) bytes")
            return completionHandler(.cancel)
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let tooLarge = lock.withLock { () -> Bool in
            body.append(contentsOf: data)
            return body.count > ImageReference.maxBytes
        }
        if tooLarge {
            fail("it is larger than \(ImageReference.maxBytes) bytes")
            dataTask.cancel()
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (failure, body) = lock.withLock { (self.failure, self.body) }
        if let failure {
            finish?(.failure(ImageLoader.Failure(failure)))
        } else if let error {
            finish?(.failure(ImageLoader.Failure("it could not be fetched: \(error.localizedDescription)")))
        } else if (task.response as? HTTPURLResponse).map({ (300..<400).contains($0.statusCode) }) == true {
            finish?(.failure(ImageLoader.Failure("the redirect was not followed")))
        } else {
            finish?(.success(body))
        }
        finish = nil
    }
}
