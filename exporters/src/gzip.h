// gzip compression with zlib, for formats that are gzipped by definition (pprof).
#ifndef INPROF_EXPORTERS_GZIP_H_
#define INPROF_EXPORTERS_GZIP_H_

#include <string>
#include <string_view>

namespace inprof::internal {

// Compresses `data` into a gzip member (RFC 1952) with no file name and mtime 0, so equal
// input gives identical bytes. False when zlib fails (out of memory). Not async-signal-safe.
bool Gzip(std::string_view data, std::string* out);

}  // namespace inprof::internal

#endif  // INPROF_EXPORTERS_GZIP_H_
