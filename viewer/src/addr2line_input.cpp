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

unsigned long long ParseAddress(const char* text, const char** end) {
  const char* p = text;
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\v' || *p == '\f' || *p == '\r') ++p;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) p += 2;
  unsigned long long value = 0;
  bool overflow = false;
  for (;; ++p) {
    int digit;
    if (*p >= '0' && *p <= '9') {
      digit = *p - '0';
    } else if (*p >= 'a' && *p <= 'f') {
      digit = *p - 'a' + 10;
    } else if (*p >= 'A' && *p <= 'F') {
      digit = *p - 'A' + 10;
    } else {
      break;
    }
    if (value > (~0ULL >> 4)) overflow = true;
    value = (value << 4) | static_cast<unsigned>(digit);
  }
  if (end != nullptr) *end = p;
  return overflow ? ~0ULL : value;
}

unsigned long long ReadAddress(const std::string& text, const FileSymbolizer& file) {
  const char* end = nullptr;
  const unsigned long long value = ParseAddress(text.c_str(), &end);
  if (*end == '\0' || *end == '\n') return value;
  std::string name = text;
  if (!name.empty() && name.back() == '\n') name.pop_back();
  unsigned long long offset = 0;
  if (const size_t plus = name.find('+'); plus != std::string::npos) {
    offset = std::strtoull(name.c_str() + plus + 1, nullptr, 0);
    name.resize(plus);
  }
  uint64_t symbol = 0;
  return file.SymbolValue(name, &symbol) ? symbol + offset : value;
}

}  // namespace inprof::viewer
