internal import COpenSSL

/// Access to OpenSSL's per-thread error queue.
///
/// Every OpenSSL call made by this module clears the queue first, so what is drained
/// after a failure belongs to that call.
enum OpenSSLErrorQueue {
    static func clear() {
        ERR_clear_error()
    }

    /// Empties the queue, returning the first packed error code (0 if none) and all messages.
    static func drain() -> (code: UInt, message: String) {
        var first: UInt = 0
        var messages: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            if first == 0 { first = code }
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        }
        return (first, messages.joined(separator: "; "))
    }

    /// A ``DTLSError`` for a failed setup call, carrying whatever OpenSSL queued.
    static func error(_ code: DTLSError.Code, _ what: String) -> DTLSError {
        let (openSSLCode, message) = drain()
        return DTLSError(
            code: code, openSSLErrorCode: openSSLCode,
            message: message.isEmpty ? what : "\(what): \(message)")
    }
}
