// gzip through zlib's deflate with a gzip wrapper (windowBits 15 + 16).
#include "gzip.h"

#include <zlib.h>

#include <algorithm>
#include <climits>

namespace inprof::internal {

bool Gzip(std::string_view data, std::string* out) {
  z_stream z{};
  // Level 6 is zlib's default: pprof files are small next to the time spent writing them.
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
  out->clear();
  out->resize(deflateBound(&z, static_cast<uLong>(data.size())) + 64);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  size_t in_left = data.size();
  size_t produced = 0;
  int rc = Z_OK;
  do {
    // avail_in/avail_out are 32-bit: feed inputs above 4 GiB in pieces.
    const uInt in_chunk = static_cast<uInt>(std::min<size_t>(in_left, UINT_MAX));
    z.avail_in = in_chunk;
    if (produced == out->size()) out->resize(out->size() * 2);
    z.next_out = reinterpret_cast<Bytef*>(out->data() + produced);
    z.avail_out = static_cast<uInt>(std::min<size_t>(out->size() - produced, UINT_MAX));
    const uInt out_before = z.avail_out;
    rc = deflate(&z, in_chunk == in_left ? Z_FINISH : Z_NO_FLUSH);
    in_left -= in_chunk - z.avail_in;
    produced += out_before - z.avail_out;
  } while (rc == Z_OK || rc == Z_BUF_ERROR);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return false;
  out->resize(produced);
  return true;
}

}  // namespace inprof::internal
