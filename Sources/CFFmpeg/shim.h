#ifndef LIVEROOM_CFFMPEG_SHIM_H
#define LIVEROOM_CFFMPEG_SHIM_H
#include <stdio.h>
#include <errno.h>
#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/opt.h>
#include <libavutil/imgutils.h>
#include <libavutil/channel_layout.h>
#include <libswscale/swscale.h>
#include <libswresample/swresample.h>

// FFmpeg error codes are macros built from MKTAG and negation.
static inline int liveroom_averror_eof(void) { return AVERROR_EOF; }
static inline int liveroom_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int liveroom_averror(int errnum) { return AVERROR(errnum); }
static inline int64_t liveroom_av_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline AVRational liveroom_av_time_base_q(void) { return AV_TIME_BASE_Q; }
static inline int liveroom_avfmt_flag_nofile(void) { return AVFMT_NOFILE; }
static inline int liveroom_av_codec_flag_global_header(void) { return AV_CODEC_FLAG_GLOBAL_HEADER; }
static inline int liveroom_avfmt_globalheader(void) { return AVFMT_GLOBALHEADER; }
static inline int liveroom_averror_exit(void) { return AVERROR_EXIT; }

/// Installs an interrupt callback on a format context (checked by blocking network I/O
/// such as the RTMP handshake and TCP writes) and returns it for avio_open2.
static inline const AVIOInterruptCB *liveroom_set_interrupt_callback(
    AVFormatContext *context, int (*callback)(void *), void *opaque) {
    context->interrupt_callback.callback = callback;
    context->interrupt_callback.opaque = opaque;
    return &context->interrupt_callback;
}

/// av_strerror into a caller buffer, never failing.
static inline void liveroom_av_strerror(int errnum, char *buf, size_t size) {
    if (av_strerror(errnum, buf, size) < 0) {
        snprintf(buf, size, "ffmpeg error %d", errnum);
    }
}
#endif
