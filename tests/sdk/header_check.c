/* The public C header compiles alone as C99. */
#include <inprof/inprof.h>

int inprof_header_check_c(void) { return inprof_start == 0 ? INPROF_ERR_INTERNAL : INPROF_OK; }
