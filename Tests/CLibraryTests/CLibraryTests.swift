import CFFmpeg
import COpenSSL
import COpus
import CSRTP
import CVPX
import Foundation
import Testing

// Each suite drives one C library end to end through the module maps and shims,
// so a broken header, link flag or shim shows up here before it shows up in the media path.

// MARK: - Opus

@Suite struct OpusTests {
    static let sampleRate: Int32 = 48_000
    static let channels: Int32 = 2
    static let frameSize: Int32 = 960  // 20 ms at 48 kHz

    @Test func encodeAndDecodeOneSineFrame() throws {
        var err: Int32 = 0
        let encoder = try #require(opus_encoder_create(Self.sampleRate, Self.channels, OPUS_APPLICATION_VOIP, &err))
        defer { opus_encoder_destroy(encoder) }
        #expect(err == OPUS_OK)
        #expect(liveroom_opus_set_bitrate(encoder, 64_000) == OPUS_OK)

        let decoder = try #require(opus_decoder_create(Self.sampleRate, Self.channels, &err))
        defer { opus_decoder_destroy(decoder) }
        #expect(err == OPUS_OK)

        // 440 Hz sine at half scale, same on both channels (interleaved).
        var pcm = [opus_int16](repeating: 0, count: Int(Self.frameSize * Self.channels))
        for i in 0..<Int(Self.frameSize) {
            let s = opus_int16(16_000 * sin(2 * Double.pi * 440 * Double(i) / Double(Self.sampleRate)))
            pcm[2 * i] = s
            pcm[2 * i + 1] = s
        }

        var packet = [UInt8](repeating: 0, count: 4000)
        let packetLen = opus_encode(encoder, pcm, Self.frameSize, &packet, Int32(packet.count))
        #expect(packetLen > 2, "opus_encode returned \(packetLen)")
        try #require(packetLen > 0)

        var decoded = [opus_int16](repeating: 0, count: Int(Self.frameSize * Self.channels))
        let samples = opus_decode(decoder, packet, packetLen, &decoded, Self.frameSize, 0)
        #expect(samples == Self.frameSize)

        let rms = (decoded.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(decoded.count)).squareRoot()
        // Input RMS is 16000/√2 ≈ 11300; the first frame loses a little to the codec's lookahead.
        #expect(rms > 4_000 && rms < 16_000, "decoded RMS \(rms)")
    }
}

// MARK: - VP8 (libvpx)

@Suite struct VP8Tests {
    static let width: UInt32 = 320
    static let height: UInt32 = 240
    /// Horizontal luma ramp 32...191, flat chroma.
    static func luma(x: Int) -> UInt8 { UInt8(32 + x / 2) }
    static let u: UInt8 = 90
    static let v: UInt8 = 200

    @Test func encodeKeyframeAndDecodeIt() throws {
        // Encoder.
        var cfg = vpx_codec_enc_cfg_t()
        #expect(liveroom_vpx_enc_config_default_vp8(&cfg) == VPX_CODEC_OK)
        cfg.g_w = Self.width
        cfg.g_h = Self.height
        cfg.g_timebase = vpx_rational(num: 1, den: 30)
        cfg.rc_target_bitrate = 1_000
        cfg.g_lag_in_frames = 0
        cfg.g_threads = 1

        let enc = UnsafeMutablePointer<vpx_codec_ctx_t>.allocate(capacity: 1)
        enc.initialize(to: vpx_codec_ctx_t())
        defer { enc.deallocate() }
        try #require(liveroom_vpx_enc_init_vp8(enc, &cfg, 0) == VPX_CODEC_OK)
        defer { vpx_codec_destroy(enc) }

        let image = try #require(vpx_img_alloc(nil, VPX_IMG_FMT_I420, Self.width, Self.height, 1))
        defer { vpx_img_free(image) }
        let img = image.pointee
        for y in 0..<Int(Self.height) {
            for x in 0..<Int(Self.width) {
                img.planes.0![y * Int(img.stride.0) + x] = Self.luma(x: x)
            }
        }
        for y in 0..<Int(Self.height / 2) {
            for x in 0..<Int(Self.width / 2) {
                img.planes.1![y * Int(img.stride.1) + x] = Self.u
                img.planes.2![y * Int(img.stride.2) + x] = Self.v
            }
        }

        try #require(vpx_codec_encode(enc, image, 0, 1, vpx_enc_frame_flags_t(VPX_EFLAG_FORCE_KF), UInt(VPX_DL_REALTIME)) == VPX_CODEC_OK)
        var frame: [UInt8]? = nil
        var iter: vpx_codec_iter_t? = nil
        while let pkt = vpx_codec_get_cx_data(enc, &iter) {
            guard pkt.pointee.kind == VPX_CODEC_CX_FRAME_PKT else { continue }
            #expect(liveroom_vpx_packet_is_keyframe(pkt) != 0)
            let f = pkt.pointee.data.frame
            frame = Array(UnsafeRawBufferPointer(start: f.buf, count: f.sz))
        }
        let bitstream = try #require(frame, "encoder produced no frame packet")
        // RFC 6386 §9.1: key frame tag bit 0 is 0, then start code 9d 01 2a, then 14-bit width/height.
        try #require(bitstream.count > 10)
        #expect(bitstream[0] & 1 == 0)
        #expect(Array(bitstream[3...5]) == [0x9d, 0x01, 0x2a])
        #expect((UInt32(bitstream[6]) | UInt32(bitstream[7]) << 8) & 0x3fff == Self.width)
        #expect((UInt32(bitstream[8]) | UInt32(bitstream[9]) << 8) & 0x3fff == Self.height)

        // Decoder.
        let dec = UnsafeMutablePointer<vpx_codec_ctx_t>.allocate(capacity: 1)
        dec.initialize(to: vpx_codec_ctx_t())
        defer { dec.deallocate() }
        try #require(liveroom_vpx_dec_init_vp8(dec) == VPX_CODEC_OK)
        defer { vpx_codec_destroy(dec) }

        #expect(vpx_codec_decode(dec, bitstream, UInt32(bitstream.count), nil, 0) == VPX_CODEC_OK)
        var dIter: vpx_codec_iter_t? = nil
        let out = try #require(vpx_codec_get_frame(dec, &dIter), "decoder produced no image").pointee
        #expect(out.d_w == Self.width)
        #expect(out.d_h == Self.height)
        #expect(out.fmt == VPX_IMG_FMT_I420)

        for (x, y) in [(8, 8), (100, 60), (160, 120), (300, 200)] {
            let got = Int(out.planes.0![y * Int(out.stride.0) + x])
            #expect(abs(got - Int(Self.luma(x: x))) <= 8, "luma at (\(x),\(y)) is \(got), encoded \(Self.luma(x: x))")
        }
        #expect(abs(Int(out.planes.1![60 * Int(out.stride.1) + 80]) - Int(Self.u)) <= 8)
        #expect(abs(Int(out.planes.2![60 * Int(out.stride.2) + 80]) - Int(Self.v)) <= 8)
    }
}

// MARK: - SRTP (libsrtp2)

@Suite struct SRTPTests {
    /// libsrtp's global init is not thread safe; a static let runs it exactly once here.
    /// LiveRoomSecureTransport may have run it first in this process, which makes this call
    /// answer bad_param (its debug module is already loaded): initialized all the same.
    static let initStatus: srtp_err_status_t = srtp_init()

    enum Profile: String, CaseIterable, Sendable {
        case aesCm128HmacSha1_80, aeadAes128Gcm

        var masterKeyLength: Int { self == .aesCm128HmacSha1_80 ? 30 : 28 }  // key + salt
        var tagLength: Int { self == .aesCm128HmacSha1_80 ? 10 : 16 }

        func apply(to policy: inout srtp_policy_t) {
            switch self {
            case .aesCm128HmacSha1_80:
                srtp_crypto_policy_set_rtp_default(&policy.rtp)
                srtp_crypto_policy_set_rtcp_default(&policy.rtcp)
            case .aeadAes128Gcm:
                srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtp)
                srtp_crypto_policy_set_aes_gcm_128_16_auth(&policy.rtcp)
            }
        }
    }

    static func makeSession(_ profile: Profile, key: [UInt8], type: srtp_ssrc_type_t) throws -> srtp_t {
        var policy = srtp_policy_t()
        profile.apply(to: &policy)
        policy.ssrc.type = type
        policy.window_size = 128
        var key = key
        var session: srtp_t? = nil
        let status = key.withUnsafeMutableBufferPointer { buf in
            policy.key = buf.baseAddress
            return srtp_create(&session, &policy)
        }
        try #require(status == srtp_err_status_ok, "srtp_create failed: \(status.rawValue)")
        return try #require(session)
    }

    static func rtpPacket(seq: UInt16, payload: [UInt8]) -> [UInt8] {
        let ts: UInt32 = 0x1234_5678, ssrc: UInt32 = 0xCAFE_BABE
        var p: [UInt8] = [0x80, 96, UInt8(seq >> 8), UInt8(seq & 0xff)]
        p += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: ts >> $0) }
        p += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: ssrc >> $0) }
        return p + payload
    }

    /// Protects `packet` with room for the trailer and returns the SRTP bytes.
    static func protect(_ session: srtp_t, _ packet: [UInt8]) throws -> [UInt8] {
        var buf = packet + [UInt8](repeating: 0, count: Int(liveroom_srtp_max_trailer_len()))
        var len = Int32(packet.count)
        let status = srtp_protect(session, &buf, &len)
        try #require(status == srtp_err_status_ok, "srtp_protect failed: \(status.rawValue)")
        return Array(buf[0..<Int(len)])
    }

    static func unprotect(_ session: srtp_t, _ packet: [UInt8]) -> (srtp_err_status_t, [UInt8]) {
        var buf = packet
        var len = Int32(buf.count)
        let status = srtp_unprotect(session, &buf, &len)
        return (status, Array(buf[0..<Int(len)]))
    }

    @Test(arguments: Profile.allCases)
    func protectUnprotectAndRejectTampering(_ profile: Profile) throws {
        try #require(Self.initStatus == srtp_err_status_ok || Self.initStatus == srtp_err_status_bad_param)
        let key = (0..<profile.masterKeyLength).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
        let sender = try Self.makeSession(profile, key: key, type: ssrc_any_outbound)
        defer { srtp_dealloc(sender) }
        let receiver = try Self.makeSession(profile, key: key, type: ssrc_any_inbound)
        defer { srtp_dealloc(receiver) }

        let payload = [UInt8](repeating: 0xAB, count: 160)
        let plain = Self.rtpPacket(seq: 1, payload: payload)
        let secured = try Self.protect(sender, plain)
        #expect(secured.count == plain.count + profile.tagLength)
        #expect(Array(secured[0..<12]) == Array(plain[0..<12]), "RTP header must stay in the clear")
        #expect(Array(secured[12..<12 + payload.count]) != payload, "payload must be encrypted")

        let (status, recovered) = Self.unprotect(receiver, secured)
        #expect(status == srtp_err_status_ok)
        #expect(recovered == plain)

        // A fresh packet (new sequence number, so the replay check passes) with one payload bit flipped.
        var tampered = try Self.protect(sender, Self.rtpPacket(seq: 2, payload: payload))
        tampered[20] ^= 0x01
        #expect(Self.unprotect(receiver, tampered).0 == srtp_err_status_auth_fail)
    }
}

// MARK: - FFmpeg

@Suite struct FFmpegTests {
    @Test func strerrorDescribesEOF() {
        var buf = [CChar](repeating: 0, count: 128)
        liveroom_av_strerror(liveroom_averror_eof(), &buf, buf.count)
        let message = buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        #expect(!message.isEmpty)
        #expect(message.lowercased().contains("end of file"), "got \(message)")
    }

    /// Muxes an FLV file with one H.264 stream. With libx264 available it also encodes
    /// and writes one real keyframe; otherwise only the header and trailer are written.
    @Test func writesFLVFile() throws {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("liveroom-clib-\(UUID().uuidString).flv").path
        defer { try? FileManager.default.removeItem(atPath: path) }

        var fmt: UnsafeMutablePointer<AVFormatContext>? = nil
        #expect(avformat_alloc_output_context2(&fmt, nil, "flv", path) >= 0)
        let ctx = try #require(fmt)
        defer { avformat_free_context(ctx) }
        let stream = try #require(avformat_new_stream(ctx, nil))

        var enc: UnsafeMutablePointer<AVCodecContext>? = nil
        defer { avcodec_free_context(&enc) }
        if let codec = avcodec_find_encoder_by_name("libx264") {
            let e = try #require(avcodec_alloc_context3(codec))
            enc = e
            e.pointee.width = 320
            e.pointee.height = 240
            e.pointee.pix_fmt = AV_PIX_FMT_YUV420P
            e.pointee.time_base = AVRational(num: 1, den: 25)
            e.pointee.framerate = AVRational(num: 25, den: 1)
            e.pointee.thread_count = 1
            if ctx.pointee.oformat.pointee.flags & liveroom_avfmt_globalheader() != 0 {
                e.pointee.flags |= liveroom_av_codec_flag_global_header()
            }
            av_opt_set(e.pointee.priv_data, "preset", "ultrafast", 0)
            av_opt_set(e.pointee.priv_data, "tune", "zerolatency", 0)
            av_log_set_level(AV_LOG_ERROR)  // keep libx264's banner out of the test log
            try #require(avcodec_open2(e, codec, nil) == 0)
            #expect(e.pointee.extradata_size > 0, "global header should give SPS/PPS extradata")
            #expect(avcodec_parameters_from_context(stream.pointee.codecpar, e) >= 0)
            stream.pointee.time_base = e.pointee.time_base
        } else {
            let par = stream.pointee.codecpar!
            par.pointee.codec_type = AVMEDIA_TYPE_VIDEO
            par.pointee.codec_id = AV_CODEC_ID_H264
            par.pointee.width = 320
            par.pointee.height = 240
            stream.pointee.time_base = AVRational(num: 1, den: 1000)
        }

        try #require(avio_open(&ctx.pointee.pb, path, AVIO_FLAG_WRITE) >= 0)
        #expect(avformat_write_header(ctx, nil) >= 0)

        var packets = 0
        if let e = enc {
            var frame = av_frame_alloc()
            defer { av_frame_free(&frame) }
            var pkt = av_packet_alloc()
            defer { av_packet_free(&pkt) }
            let f = try #require(frame), p = try #require(pkt)
            f.pointee.format = AV_PIX_FMT_YUV420P.rawValue
            f.pointee.width = 320
            f.pointee.height = 240
            try #require(av_frame_get_buffer(f, 0) >= 0)
            for plane in 0..<3 {
                let (data, stride) = [(f.pointee.data.0, f.pointee.linesize.0),
                                      (f.pointee.data.1, f.pointee.linesize.1),
                                      (f.pointee.data.2, f.pointee.linesize.2)][plane]
                let rows = plane == 0 ? 240 : 120
                memset(data!, plane == 0 ? 120 : 128, Int(stride) * rows)
            }
            f.pointee.pts = 0
            #expect(avcodec_send_frame(e, f) >= 0)
            #expect(avcodec_send_frame(e, nil) >= 0)  // flush
            while avcodec_receive_packet(e, p) == 0 {
                if packets == 0 { #expect(p.pointee.flags & AV_PKT_FLAG_KEY != 0) }
                packets += 1
                av_packet_rescale_ts(p, e.pointee.time_base, stream.pointee.time_base)
                p.pointee.stream_index = stream.pointee.index
                #expect(av_interleaved_write_frame(ctx, p) >= 0)
            }
            #expect(packets == 1)
        }

        #expect(av_write_trailer(ctx) >= 0)
        #expect(avio_closep(&ctx.pointee.pb) >= 0)

        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        try #require(bytes.count >= 13, "file has only \(bytes.count) bytes")
        #expect(Array(bytes[0..<3]) == Array("FLV".utf8))
        #expect(bytes[3] == 1, "FLV version")
        #expect(bytes[4] & 0x01 != 0, "video flag set in the FLV header")
        if packets > 0 { #expect(bytes.count > 200, "an encoded keyframe should make the file larger") }
    }
}

// MARK: - OpenSSL (DTLS)

@Suite struct OpenSSLTests {
    /// A DTLS context with its own P-256 key and self-signed certificate, WebRTC style.
    final class Endpoint {
        let ctx: OpaquePointer
        let key: OpaquePointer
        let cert: OpaquePointer

        init() throws {
            ctx = try #require(SSL_CTX_new(DTLS_method()))
            // EVP_EC_gen is a variadic macro; the explicit keygen context needs no shim.
            let pctx = try #require(EVP_PKEY_CTX_new_from_name(nil, "EC", nil))
            defer { EVP_PKEY_CTX_free(pctx) }
            try #require(EVP_PKEY_keygen_init(pctx) == 1)
            try #require(EVP_PKEY_CTX_set_group_name(pctx, "P-256") == 1)
            var pkey: OpaquePointer? = nil
            try #require(EVP_PKEY_generate(pctx, &pkey) == 1)
            key = try #require(pkey)

            cert = try #require(X509_new())
            #expect(X509_set_version(cert, 2) == 1)
            #expect(ASN1_INTEGER_set(X509_get_serialNumber(cert), 1) == 1)
            X509_gmtime_adj(X509_getm_notBefore(cert), -3600)
            X509_gmtime_adj(X509_getm_notAfter(cert), 86_400)
            #expect(X509_set_pubkey(cert, key) == 1)
            let name = X509_get_subject_name(cert)
            #expect(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, "liveroom", -1, -1, 0) == 1)
            #expect(X509_set_issuer_name(cert, name) == 1)
            #expect(X509_sign(cert, key, EVP_sha256()) > 0)

            #expect(SSL_CTX_use_certificate(ctx, cert) == 1)
            #expect(SSL_CTX_use_PrivateKey(ctx, key) == 1)
            #expect(SSL_CTX_check_private_key(ctx) == 1)
            // Returns 0 on success (sic).
            #expect(SSL_CTX_set_tlsext_use_srtp(ctx, "SRTP_AEAD_AES_128_GCM:SRTP_AES128_CM_SHA1_80") == 0)
            // Peers are self-signed; the fingerprint from signaling is what authenticates them.
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT) { _, _ in 1 }
        }

        deinit {
            SSL_CTX_free(ctx)
            X509_free(cert)
            EVP_PKEY_free(key)
        }

        var fingerprint: [UInt8] { OpenSSLTests.sha256Fingerprint(cert) }

        /// An SSL object reading from and writing to memory BIOs (owned by the SSL).
        func makeSSL(server: Bool) throws -> OpaquePointer {
            let ssl = try #require(SSL_new(ctx))
            let rbio = try #require(BIO_new(BIO_s_mem())), wbio = try #require(BIO_new(BIO_s_mem()))
            liveroom_BIO_set_mem_eof_return(rbio, -1)  // empty read means "retry", not EOF
            SSL_set_bio(ssl, rbio, wbio)
            #expect(liveroom_SSL_set_mtu(ssl, 1200) == 1200)  // SSL_CTRL_SET_MTU returns the new MTU
            if server { SSL_set_accept_state(ssl) } else { SSL_set_connect_state(ssl) }
            return ssl
        }
    }

    static func sha256Fingerprint(_ cert: OpaquePointer) -> [UInt8] {
        var md = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var len: UInt32 = 0
        guard X509_digest(cert, EVP_sha256(), &md, &len) == 1 else { return [] }
        return Array(md[0..<Int(len)])
    }

    /// Moves everything `from` has written into `to`'s read BIO; returns the byte count.
    static func pump(from: OpaquePointer, to: OpaquePointer) -> Int {
        var buf = [UInt8](repeating: 0, count: 4096)
        var moved = 0
        while true {
            let n = BIO_read(SSL_get_wbio(from), &buf, Int32(buf.count))
            if n <= 0 { return moved }
            BIO_write(SSL_get_rbio(to), buf, n)
            moved += Int(n)
        }
    }

    static func exportSRTPKeys(_ ssl: OpaquePointer) -> [UInt8]? {
        let label = "EXTRACTOR-dtls_srtp"
        var out = [UInt8](repeating: 0, count: 60)
        let ok = SSL_export_keying_material(ssl, &out, out.count, label, label.utf8.count, nil, 0, 0)
        return ok == 1 ? out : nil
    }

    @Test func certificateFingerprintIsSHA256() throws {
        let endpoint = try Endpoint()
        let fp = endpoint.fingerprint
        #expect(fp.count == 32)
        #expect(fp.contains { $0 != 0 })
        #expect(try Endpoint().fingerprint != fp, "two fresh certificates must differ")

        let ssl = try endpoint.makeSSL(server: false)
        defer { SSL_free(ssl) }
        #expect(SSL_get_rbio(ssl) != nil && SSL_get_wbio(ssl) != nil)
    }

    @Test func dtlsHandshakeInMemoryAndExportSRTPKeys() throws {
        let clientEnd = try Endpoint(), serverEnd = try Endpoint()
        let client = try clientEnd.makeSSL(server: false)
        defer { SSL_free(client) }
        let server = try serverEnd.makeSSL(server: true)
        defer { SSL_free(server) }

        var rounds = 0
        while SSL_is_init_finished(client) == 0 || SSL_is_init_finished(server) == 0 {
            rounds += 1
            try #require(rounds <= 20, "handshake did not finish")
            for ssl in [client, server] where SSL_is_init_finished(ssl) == 0 {
                let r = SSL_do_handshake(ssl)
                if r != 1 {
                    let e = SSL_get_error(ssl, r)
                    try #require(e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE,
                                 "SSL_do_handshake error \(e), \(String(cString: ERR_error_string(ERR_get_error(), nil)))")
                }
            }
            _ = Self.pump(from: client, to: server)
            _ = Self.pump(from: server, to: client)
        }

        #expect(SSL_version(client) == DTLS1_2_VERSION)
        #expect(SSL_version(server) == DTLS1_2_VERSION)
        let profile = try #require(SSL_get_selected_srtp_profile(client))
        #expect(String(cString: profile.pointee.name) == "SRTP_AEAD_AES_128_GCM")
        #expect(SSL_get_selected_srtp_profile(server)?.pointee.id == profile.pointee.id)

        // Each side sees the other's certificate, matching the fingerprint it would get over signaling.
        for (ssl, peer) in [(client, serverEnd), (server, clientEnd)] {
            let cert = try #require(SSL_get1_peer_certificate(ssl))
            defer { X509_free(cert) }
            #expect(Self.sha256Fingerprint(cert) == peer.fingerprint)
        }

        let clientKeys = try #require(Self.exportSRTPKeys(client))
        let serverKeys = try #require(Self.exportSRTPKeys(server))
        #expect(clientKeys == serverKeys)
        #expect(clientKeys.contains { $0 != 0 })
    }
}
