/* The public C header compiles alone as C99. */
#include <inprof/inprof.h>

int inprof_header_check_c(void) {
  enum inprof_error e = INPROF_OK;
  return inprof_strerror(e) != 0 ? INPROF_OK : INPROF_ERR_INTERNAL;
}
