#ifndef LIVEROOM_COPUS_SHIM_H
#define LIVEROOM_COPUS_SHIM_H
#include <opus/opus.h>

// opus_encoder_ctl and opus_decoder_ctl are variadic; Swift calls these instead.
static inline int liveroom_opus_set_bitrate(OpusEncoder *enc, opus_int32 bps) {
    return opus_encoder_ctl(enc, OPUS_SET_BITRATE(bps));
}
static inline int liveroom_opus_set_complexity(OpusEncoder *enc, opus_int32 complexity) {
    return opus_encoder_ctl(enc, OPUS_SET_COMPLEXITY(complexity));
}
static inline int liveroom_opus_set_inband_fec(OpusEncoder *enc, opus_int32 on) {
    return opus_encoder_ctl(enc, OPUS_SET_INBAND_FEC(on));
}
static inline int liveroom_opus_set_packet_loss_perc(OpusEncoder *enc, opus_int32 perc) {
    return opus_encoder_ctl(enc, OPUS_SET_PACKET_LOSS_PERC(perc));
}
#endif
