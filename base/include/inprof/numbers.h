// Reading numbers from text the way every reader and parser of the project does: the whole
// text or nothing, and the same answer in every locale (std::from_chars, not strtoul).
#ifndef INPROF_BASE_NUMBERS_H_
#define INPROF_BASE_NUMBERS_H_

#include <charconv>
#include <concepts>
#include <string_view>
#include <system_error>

namespace inprof {

// The whole of `text` as an unsigned number in `base` (10 or 16 in practice): digits only,
// no sign, no spaces, no "0x", and no overflow of U. On failure `*out` is unspecified.
// Not async-signal-safe.
template <std::unsigned_integral U>
bool ParseUnsigned(std::string_view text, U* out, int base = 10) {
  // from_chars takes no sign for unsigned types, so "-1" and "+1" fail here.
  const auto r = std::from_chars(text.data(), text.data() + text.size(), *out, base);
  return !text.empty() && r.ec == std::errc() && r.ptr == text.data() + text.size();
}

}  // namespace inprof

#endif  // INPROF_BASE_NUMBERS_H_
