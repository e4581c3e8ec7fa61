#ifndef LIVEROOM_CSRTP_SHIM_H
#define LIVEROOM_CSRTP_SHIM_H
#include <string.h>
#include <srtp2/srtp.h>
#include <srtp2/cipher.h>

/// Longest SRTP/SRTCP trailer libsrtp may append (auth tag plus MKI and SRTCP index).
static inline int liveroom_srtp_max_trailer_len(void) { return SRTP_MAX_TRAILER_LEN; }

/// libsrtp's AES counter mode and AES-GCM transforms, the ones its sessions use. libsrtp2
/// exports them but declares them only in private headers; the tests run the published
/// RFC 3711 and RFC 7714 test vectors through them.
extern const srtp_cipher_type_t srtp_aes_icm_128;
extern const srtp_cipher_type_t srtp_aes_gcm_128;
#endif
