#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "addr2line.h"

namespace inprof::viewer {

bool AddressReader::Next(std::string* chunk) {
  chunk->clear();
  constexpr size_t kMax = 99;  // fgets(buf, 100, stdin)
  while (chunk->size() < kMax) {
    if (begin_ == end_) {
      if (eof_) break;
      // Everything asked so far has been answered: hand it over before waiting for more.
      std::fflush(out_);
      ssize_t n;
      do {
        n = read(fd_, buffer_, sizeof buffer_);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) {
        eof_ = true;
        break;
      }
      begin_ = 0;
      end_ = static_cast<size_t>(n);
    }
    const size_t want = kMax - chunk->size();
    const size_t avail = end_ - begin_;
    const char* start = buffer_ + begin_;
    const void* newline = std::memchr(start, '\n', avail < want ? avail : want);
    const size_t take = newline != nullptr ? static_cast<const char*>(newline) - start + 1
                                           : (avail < want ? avail : want);
    chunk->append(start, take);
    begin_ += take;
    if (newline != nullptr) break;
  }
  return !chunk->empty();
}

unsigned long long ParseAddress(const char* text) { return std::strtoull(text, nullptr, 16); }

}  // namespace inprof::viewer
