#include "inprof/printable.h"

namespace inprof {

std::string Printable(std::string_view text, const PrintableStyle& style) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  const size_t shown = text.size() < style.max_bytes ? text.size() : style.max_bytes;
  for (size_t i = 0; i < shown; ++i) {
    const char ch = text[i];
    const auto c = static_cast<unsigned char>(ch);
    if (style.named_escapes && c == '\n') {
      out += "\\n";
    } else if (style.named_escapes && c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f || (style.escape_backslash && c == '\\') ||
               (style.escape_non_ascii && c >= 0x80)) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  if (text.size() > shown) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace inprof
