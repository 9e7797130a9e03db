// Text from outside (a configuration value, a URL, a file name, a symbol) as a message may
// show it: bytes that would forge a second line in a log or drive the terminal written as
// escapes instead.
#ifndef INPROF_BASE_PRINTABLE_H_
#define INPROF_BASE_PRINTABLE_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace inprof {

// What Printable escapes besides the control characters (bytes below 0x20 and 0x7f), which
// are always written \xNN (lower-case hex).
struct PrintableStyle {
  // '\' as \x5c, so that an escape in the output was always written by Printable.
  bool escape_backslash = false;
  // Bytes 0x80-0xff as \xNN too (a URL: ASCII only).
  bool escape_non_ascii = false;
  // Newline and tab as \n and \t rather than \x0a and \x09 (names a reader recognises).
  bool named_escapes = false;
  // Bytes of `text` shown; past them "... (N bytes)" gives the whole length.
  size_t max_bytes = std::string_view::npos;
};

// `text` with the bytes `style` names escaped. Not async-signal-safe.
std::string Printable(std::string_view text, const PrintableStyle& style);

}  // namespace inprof

#endif  // INPROF_BASE_PRINTABLE_H_
