// Parsing the lines search tools print for a hit: `path:line:text` (grep -n, git grep -n,
// gogrep), `path:line:col:text` (rg -n --column, rg --vimgrep, semgrep --vim/--emacs), and
// ranges for multi-line matches (e.g. ast-grep's JSON through jq): `path:first-last:text` and
// `path:line:col-last:col:text`.
#ifndef INPROF_VIEWER_HIT_LINE_H_
#define INPROF_VIEWER_HIT_LINE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace inprof::viewer {

struct HitLine {
  std::string_view path;
  uint32_t first = 0;   // first line of the hit
  uint32_t last = 0;    // last line (== first for one-line hits)
  uint32_t column = 0;  // 0 when the tool printed none
  size_t text = 0;      // offset of what follows the location ("path:12:" -> 8)
};

// Parses `line`; false when it is not a hit (a context line, a "--" separator, a summary).
// The path is everything before the first ":<digits>" followed by ':', '-<digits>:' or the
// end of the line, so paths may contain ':' as long as no digits follow it.
bool ParseHitLine(std::string_view line, HitLine* hit);

// `line` without ANSI SGR sequences (a tool run with --color=always).
std::string StripColor(std::string_view line);

}  // namespace inprof::viewer

#endif  // INPROF_VIEWER_HIT_LINE_H_
