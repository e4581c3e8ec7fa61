internal import COpenSSL

/// An OpenSSL `X509`. Never mutated after creation; OpenSSL reference-counts it
/// atomically, so sharing it read-only across threads is safe.
final class X509Certificate: @unchecked Sendable {
    let handle: OpaquePointer

    /// Takes ownership of one reference.
    init(owning handle: OpaquePointer) {
        self.handle = handle
    }

    /// Adds a reference to a certificate owned elsewhere (e.g. by an `X509_STORE_CTX`).
    convenience init(retaining handle: OpaquePointer) {
        X509_up_ref(handle)
        self.init(owning: handle)
    }

    deinit {
        X509_free(handle)
    }

    /// A self-signed X.509 v3 certificate for `privateKey`, signed with ECDSA-SHA256.
    ///
    /// The serial number is 63 random bits. Validity starts one day in the past (peer clock
    /// skew) and ends `validitySeconds` from now, by the system's wall clock.
    static func selfSigned(
        privateKey: PrivateKey, commonName: String, validitySeconds: Int
    ) throws(DTLSError) -> X509Certificate {
        OpenSSLErrorQueue.clear()
        guard let x509 = X509_new() else {
            throw OpenSSLErrorQueue.error(.certificateGeneration, "X509_new failed")
        }
        let certificate = X509Certificate(owning: x509)  // frees on any failure below

        var serial: UInt64 = 0
        guard RAND_bytes(&serial, Int32(MemoryLayout<UInt64>.size)) == 1 else {
            throw OpenSSLErrorQueue.error(.certificateGeneration, "RAND_bytes failed")
        }
        serial = max(serial & 0x7FFF_FFFF_FFFF_FFFF, 1)

        let name = X509_get_subject_name(x509)
        guard X509_set_version(x509, 2) == 1,
            ASN1_INTEGER_set_uint64(X509_get_serialNumber(x509), serial) == 1,
            X509_gmtime_adj(X509_getm_notBefore(x509), -86_400) != nil,
            X509_gmtime_adj(X509_getm_notAfter(x509), validitySeconds) != nil,
            X509_set_pubkey(x509, privateKey.handle) == 1,
            X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, commonName, -1, -1, 0) == 1,
            X509_set_issuer_name(x509, name) == 1,
            X509_sign(x509, privateKey.handle, EVP_sha256()) > 0
        else {
            throw OpenSSLErrorQueue.error(.certificateGeneration, "building the self-signed certificate failed")
        }
        return certificate
    }

    /// The DER encoding.
    var derEncoded: [UInt8] {
        let length = i2d_X509(handle, nil)
        guard length > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: Int(length)) { buffer, count in
            var cursor = buffer.baseAddress
            count = Int(max(0, i2d_X509(handle, &cursor)))
        }
    }

    /// The digest of the DER encoding with `algorithm`.
    func fingerprint(_ algorithm: DTLSFingerprint.Algorithm) -> DTLSFingerprint? {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_digest(handle, algorithm.messageDigest, &digest, &length) == 1 else { return nil }
        return DTLSFingerprint(algorithm: algorithm, bytes: Array(digest[0..<Int(length)]))
    }

    /// The subject's common name, if present.
    var commonName: String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard X509_NAME_get_text_by_NID(X509_get_subject_name(handle), NID_commonName, &buffer, Int32(buffer.count)) > 0
        else { return nil }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Seconds from notBefore to notAfter.
    var validityPeriodSeconds: Int? {
        var days: Int32 = 0
        var seconds: Int32 = 0
        guard ASN1_TIME_diff(&days, &seconds, X509_get0_notBefore(handle), X509_get0_notAfter(handle)) == 1 else {
            return nil
        }
        return Int(days) * 86_400 + Int(seconds)
    }
}
