/* libgenie C ABI (C99). Opaque handles, genie_<object>_<verb> names, integer status
 * codes (0 = OK, negative = error) and a thread-local genie_last_error(). No
 * exception, abort or exit ever crosses this boundary. */
#ifndef GENIE_GENIE_H
#define GENIE_GENIE_H

#include "genie/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a function signature or struct layout changes incompatibly. */
#define GENIE_ABI_VERSION 1

/* Result of every fallible function. Same values as genie::ErrorCode. */
typedef enum genie_status {
    GENIE_OK = 0,
    GENIE_INVALID_ARGUMENT = -1,
    GENIE_NOT_FOUND = -2,
    GENIE_FORMAT = -3,
    GENIE_UNSUPPORTED = -4,
    GENIE_OUT_OF_MEMORY = -5,
    GENIE_CONTEXT_OVERFLOW = -6,
    GENIE_CANCELLED = -7,
    GENIE_BUSY = -8,
    GENIE_NOT_LOADED = -9,
    GENIE_DEVICE = -10,
    GENIE_INTERNAL = -11,
    GENIE_IO = -12
} genie_status;

/* The library's ABI version (GENIE_ABI_VERSION it was built with). Thread-safe. */
GENIE_API int genie_abi_version(void);

/* The library version, e.g. "0.1.0". Static storage; never NULL; do not free. */
GENIE_API const char *genie_version(void);

/* Stable upper-case name of a status, e.g. "FORMAT". Static storage; never NULL. */
GENIE_API const char *genie_status_name(genie_status status);

/* The message of the last error on the calling thread ("" if none). Valid until the
 * next libgenie call on this thread; never NULL; do not free. */
GENIE_API const char *genie_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* GENIE_GENIE_H */
