#ifndef LIVEROOM_CSRTP_SHIM_H
#define LIVEROOM_CSRTP_SHIM_H
#include <string.h>
#include <srtp2/srtp.h>

/// Longest SRTP/SRTCP trailer libsrtp may append (auth tag plus MKI and SRTCP index).
static inline int liveroom_srtp_max_trailer_len(void) { return SRTP_MAX_TRAILER_LEN; }
#endif
