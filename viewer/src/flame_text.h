// What the viewer needs to draw flame graph boxes the way the exporters' SVG writer does
// (exporters/src/flame_svg*.cpp, whose helpers are internal to that library): names cleaned
// for XML, and the palette. The timeline page draws the flame graph of a selected range in the
// browser from these; tests/browser/timeline_browser_test.mjs checks its boxes, colours
// included, against `inprof flame` for the same range, so a change to the writer's rules that
// is not made here fails there. Not async-signal-safe.
#ifndef INPROF_VIEWER_FLAME_TEXT_H_
#define INPROF_VIEWER_FLAME_TEXT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "inprof/exporters.h"

namespace inprof::viewer {

// Length of the valid UTF-8 sequence at the start of `text`, 0 if it is not one (overlong
// forms, surrogates and code points past U+10FFFF are not), as XML parsers decide.
inline size_t Utf8Length(std::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  size_t length = 0;
  unsigned char min = 0x80, max = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) min = 0xA0;
    if (lead == 0xED) max = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) min = 0x90;
    if (lead == 0xF4) max = 0x8F;
  } else {
    return 0;
  }
  if (text.size() < length || byte(1) < min || byte(1) > max) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

// `text` fit for XML, HTML and JSON: control characters become spaces, bytes that are not
// valid UTF-8 become U+FFFD.
inline std::string CleanText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out += c < 0x20 || c == 0x7f ? ' ' : static_cast<char>(c);
      ++i;
      continue;
    }
    const size_t length = Utf8Length(text.substr(i));
    if (length == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

// A box's name as the flame graph shows it: clean, without surrounding spaces, "[unknown]"
// when nothing is left.
inline std::string CleanFlameName(std::string_view name) {
  std::string clean = CleanText(name);
  const size_t last = clean.find_last_not_of(' ');
  if (last == std::string::npos) return "[unknown]";
  clean.erase(last + 1);
  clean.erase(0, clean.find_first_not_of(' '));
  return clean;
}

// `text` cleaned, with &, <, > and " escaped: for XML and HTML text and attribute values.
inline std::string EscapeXml(std::string_view text) {
  std::string out;
  for (char c : CleanText(text)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// The fill of a box: FNV-1a of the (clean) name picks a shade in the palette of its kind —
// flamegraph.pl's "hot" colours for code, aqua for inlined functions, grey for the profiler's
// own frames — so a function has the same colour in every graph. "rgb(r,g,b)".
inline std::string FlameFill(std::string_view name, FrameKind kind) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  const double v1 = static_cast<double>(hash & 0xffff) / 0xffff;
  const double v2 = static_cast<double>((hash >> 16) & 0xffff) / 0xffff;
  const double v3 = static_cast<double>((hash >> 32) & 0xffff) / 0xffff;
  int r, g, b;
  switch (kind) {
    case FrameKind::kInlined:
      r = 50 + static_cast<int>(60 * v1);
      g = 165 + static_cast<int>(55 * v1);
      b = 165 + static_cast<int>(55 * v1);
      break;
    case FrameKind::kSynthetic:
      r = g = b = 160 + static_cast<int>(40 * v1);
      break;
    default:
      r = 205 + static_cast<int>(50 * v3);
      g = static_cast<int>(230 * v1);
      b = static_cast<int>(55 * v2);
      break;
  }
  return "rgb(" + std::to_string(r) + "," + std::to_string(g) + "," + std::to_string(b) + ")";
}

}  // namespace inprof::viewer

#endif  // INPROF_VIEWER_FLAME_TEXT_H_
