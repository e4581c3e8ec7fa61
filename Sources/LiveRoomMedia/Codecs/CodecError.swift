import CFFmpeg
import COpus
import CVPX

/// A failure reported by a C media library, with the library's own code and message.
public struct CodecError: Error, Sendable, CustomStringConvertible {
    /// The library that failed.
    public enum Library: String, Sendable {
        case opus, vpx, ffmpeg
    }

    /// The library that reported the failure.
    public var library: Library
    /// The library's return code (an `OPUS_*`, `vpx_codec_err_t` or `AVERROR` value).
    public var code: Int32
    /// The library's description of `code`, plus detail where it gives one.
    public var message: String
    /// The call that failed, e.g. `avcodec_open2(libx264)`.
    public var operation: String

    public init(library: Library, code: Int32, message: String, operation: String) {
        self.library = library
        self.code = code
        self.message = message
        self.operation = operation
    }

    public var description: String { "\(operation) failed: \(message) (\(library.rawValue) code \(code))" }

    static func ffmpeg(_ code: Int32, _ operation: String) -> CodecError {
        var buffer = [CChar](repeating: 0, count: 256)
        liveroom_av_strerror(code, &buffer, buffer.count)
        let message = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return CodecError(library: .ffmpeg, code: code, message: message, operation: operation)
    }

    static func opus(_ code: Int32, _ operation: String) -> CodecError {
        CodecError(library: .opus, code: code, message: String(cString: opus_strerror(code)), operation: operation)
    }

    static func vpx(_ code: vpx_codec_err_t, context: UnsafeMutablePointer<vpx_codec_ctx_t>?, _ operation: String) -> CodecError {
        var message = String(cString: vpx_codec_err_to_string(code))
        if let context, let detail = vpx_codec_error_detail(context) {
            message += ": " + String(cString: detail)
        }
        return CodecError(library: .vpx, code: Int32(bitPattern: code.rawValue), message: message, operation: operation)
    }
}
