#ifndef LIVEROOM_CVPX_SHIM_H
#define LIVEROOM_CVPX_SHIM_H
#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>

// vpx_codec_enc_init / vpx_codec_dec_init are macros that pass the ABI version.
static inline vpx_codec_err_t liveroom_vpx_enc_init_vp8(vpx_codec_ctx_t *ctx, const vpx_codec_enc_cfg_t *cfg, vpx_codec_flags_t flags) {
    return vpx_codec_enc_init(ctx, vpx_codec_vp8_cx(), cfg, flags);
}
static inline vpx_codec_err_t liveroom_vpx_dec_init_vp8(vpx_codec_ctx_t *ctx) {
    return vpx_codec_dec_init(ctx, vpx_codec_vp8_dx(), NULL, 0);
}
static inline vpx_codec_err_t liveroom_vpx_enc_config_default_vp8(vpx_codec_enc_cfg_t *cfg) {
    return vpx_codec_enc_config_default(vpx_codec_vp8_cx(), cfg, 0);
}
// vpx_codec_control is a variadic macro.
static inline vpx_codec_err_t liveroom_vpx_set_cpuused(vpx_codec_ctx_t *ctx, int value) {
    return vpx_codec_control(ctx, VP8E_SET_CPUUSED, value);
}
static inline vpx_codec_err_t liveroom_vpx_set_static_threshold(vpx_codec_ctx_t *ctx, unsigned int value) {
    return vpx_codec_control(ctx, VP8E_SET_STATIC_THRESHOLD, value);
}
static inline int liveroom_vpx_packet_is_keyframe(const vpx_codec_cx_pkt_t *pkt) {
    return (pkt->data.frame.flags & VPX_FRAME_IS_KEY) != 0;
}
#endif
