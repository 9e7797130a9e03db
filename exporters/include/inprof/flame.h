// Flame graphs: the SVG writer, and the pieces of it a page drawing the same boxes needs (name
// cleaning and the palette). Not async-signal-safe.
#ifndef INPROF_FLAME_H_
#define INPROF_FLAME_H_

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include "inprof/profile.h"
#include "inprof/status.h"

namespace inprof {

// Flame graphs: stacks merged into a tree, one box per (function, caller path), as wide as its
// inclusive weight, written as a self-contained interactive SVG (inline CSS and JavaScript:
// hover details, click to zoom, regex search with the matched share, icicle layout).
struct FlameOptions {
  size_t event = 0;                    // which of Profile::events the widths come from
  std::optional<size_t> before_event;  // diff only: the event of `before` (default: `event`)
  std::string title;                   // empty: "Flame Graph" ("Icicle Graph" when inverted)
  std::string subtitle;                // empty: the program, the event and its total
  uint32_t width = 1200;               // image width in pixels, 100..100000
  double min_width = 0.1;              // boxes narrower than this (pixels) are left out; their
                                       // weight stays in every ancestor's width and count
  bool inverted = false;               // icicle: the root at the top, callees below
  bool lines = false;                  // one box per source line: "function (file:line)"
  std::string count_name = "samples";  // what the counts are called in tooltips
};

// Writes the flame graph of one event of `profile` to `*out` (replacing its contents).
// Deterministic: equal profiles give identical bytes. Fails only on bad options (event out of
// range, width or min_width out of bounds). A profile without samples gives a valid SVG that
// says so. Not async-signal-safe.
Status WriteFlameSvg(const Profile& profile, const FlameOptions& options, std::string* out);
// The same bytes written to `out` as they are made, a few hundred kilobytes at a time: a big
// graph is megabytes, and memory touched for the first time is a large part of drawing it.
// Nothing is written when it fails. Not async-signal-safe.
Status WriteFlameSvg(const Profile& profile, const FlameOptions& options, std::ostream& out);

// Differential flame graph (after flamegraph.pl's difffolded.pl -n): boxes are laid out from
// `after`; each box is coloured by how its self weight changed, with `before` first scaled to
// `after`'s total: red where it got hotter, blue where it got colder, white where unchanged,
// saturated at the largest change. Tooltips add the change as a share of `after`'s total.
// Functions that vanished take no room (they have no width in `after`). Not async-signal-safe.
Status WriteDiffFlameSvg(const Profile& before, const Profile& after, const FlameOptions& options,
                         std::string* out);


// What a page drawing the same boxes as the SVG writer needs (the viewer's timeline draws the
// flame graph of a selected range in the browser, and its browser test compares the boxes,
// colours included, with `inprof flame`). Not async-signal-safe.
//
// `text` fit for XML, HTML and JSON: control characters become spaces, bytes that are not
// valid UTF-8 become U+FFFD.
std::string FlameCleanText(std::string_view text);
// A box's name as the flame graph shows it: cleaned, without surrounding spaces, "[unknown]"
// when nothing is left.
std::string FlameBoxName(std::string_view name);
// `text` cleaned, with &, <, > and " escaped: for XML and HTML text and attribute values.
std::string FlameEscapeXml(std::string_view text);
// The fill of a box of `name` (clean) and `kind`, as the flame graph colours it: "rgb(r,g,b)".
std::string FlameBoxFill(std::string_view name, FrameKind kind);
}  // namespace inprof

#endif  // INPROF_FLAME_H_
