#ifndef LIVEROOM_CSOCKET_SHIM_H
#define LIVEROOM_CSOCKET_SHIM_H
// sendmmsg(2) and struct mmsghdr are GNU extensions, which Swift's Glibc module leaves out.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>

static inline int liveroom_sendmmsg(int fd, struct mmsghdr *messages, unsigned int count) {
    return sendmmsg(fd, messages, count, MSG_DONTWAIT);
}
#endif
