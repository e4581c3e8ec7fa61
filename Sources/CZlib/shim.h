#ifndef LIVEROOM_CZLIB_SHIM_H
#define LIVEROOM_CZLIB_SHIM_H
#include <zlib.h>
#endif
