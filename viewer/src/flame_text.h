// What the viewer needs to draw flame graph boxes the way the exporters' SVG writer does
// (exporters/src/flame_svg*.cpp): names cleaned for XML, and the palette, from the writer's
// own functions. The timeline page draws the flame graph of a selected range in the browser
// from these; tests/browser/timeline_browser_test.mjs checks its boxes, colours included,
// against `inprof flame` for the same range. Not async-signal-safe.
#ifndef INPROF_VIEWER_FLAME_TEXT_H_
#define INPROF_VIEWER_FLAME_TEXT_H_

#include <string>
#include <string_view>

#include "inprof/exporters.h"
#include "flame_svg.h"

namespace inprof::viewer {

// `text` fit for XML, HTML and JSON: control characters become spaces, bytes that are not
// valid UTF-8 become U+FFFD.
inline std::string CleanText(std::string_view text) { return internal::CleanXmlText(text); }

// A box's name as the flame graph shows it.
inline std::string CleanFlameName(std::string_view name) { return internal::CleanFlameName(name); }

// `text` cleaned, with &, <, > and " escaped: for XML and HTML text and attribute values.
inline std::string EscapeXml(std::string_view text) {
  std::string out;
  internal::AppendXmlEscaped(out, internal::CleanXmlText(text));
  return out;
}

// The fill of a box of `name` (clean) and `kind`, as the flame graph colours it: "rgb(r,g,b)".
inline std::string FlameFill(std::string_view name, FrameKind kind) {
  internal::FlameSymbol symbol;
  symbol.name = std::string(name);
  symbol.kind = kind;
  std::string out;
  internal::AppendFlameColor(out, symbol);
  return out;
}

}  // namespace inprof::viewer

#endif  // INPROF_VIEWER_FLAME_TEXT_H_
