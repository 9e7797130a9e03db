// The public headers compile alone as C++.
#include <inprof/inprof.h>
#include <inprof/inprof.hpp>

int inprof_header_check_cxx() { return inprof_strerror(INPROF_OK) != nullptr ? INPROF_OK : 1; }
