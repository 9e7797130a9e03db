// The flame graph's model: stacks merged into a tree of (function, kind) nodes. Exposed for
// tests; the writers are inprof::WriteFlameSvg and inprof::WriteDiffFlameSvg.
#ifndef INPROF_EXPORTERS_FLAME_SVG_H_
#define INPROF_EXPORTERS_FLAME_SVG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "inprof/profile.h"

namespace inprof::internal {

// What a box shows: a function name, clean for XML (no control characters, valid UTF-8), and
// its kind, which picks the palette. An inlined function and the same function called for real
// are different boxes, so the graph shows where the compiler inlined.
struct FlameSymbol {
  std::string name;
  std::string escaped;  // `name` escaped for XML text and attributes
  FrameKind kind = FrameKind::kNative;
};

// Stacks merged into a tree. Node 0 is the root ("all"). Every node knows its inclusive and
// self weight in the profile being drawn, and the self weight of a baseline profile (for the
// differential graph).
//
// Built the way flamegraph.pl builds it, minus the strings: stacks are collected as symbol
// ids, sorted by their names, and merged in that order, so each stack shares its prefix with
// the one before it and new nodes come out in preorder with their children already in name
// order. No hash lookup per frame: with big, unsorted profiles a (parent, symbol) table was
// most of the time, all of it cache misses. Not thread-safe; not async-signal-safe.
class FlameTree {
 public:
  struct Node {
    uint32_t symbol = 0;
    uint32_t parent = 0;
    uint32_t depth = 0;
    uint32_t first_child = 0;  // index into children() once Finish() has run
    uint32_t child_count = 0;
    uint64_t x = 0;      // samples left of the box: its preceding siblings' and its parent's
    uint64_t total = 0;  // inclusive weight
    uint64_t self = 0;
    uint64_t baseline_self = 0;
  };

  FlameTree();

  // The id of (name, kind); names are cleaned on first sight.
  uint32_t InternSymbol(std::string_view name, FrameKind kind);
  // Adds one root-first stack of symbol ids with `weight` (to the baseline's self weights
  // when `baseline`). Takes effect in Finish().
  void AddStack(const uint32_t* symbols, size_t count, uint64_t weight, bool baseline);
  // Adds every sample of `event` in `profile`; with `lines`, frames with a source location
  // are named "function (file:line)", so each line is its own box. The samples' frames are
  // read where they are, by Finish(): `profile` must outlive that call.
  void AddProfile(const Profile& profile, size_t event, bool baseline, bool lines = false);
  // The root's weight: the sum of every stack added so far but the baseline's.
  uint64_t total() const { return total_; }
  // Merges the stacks into the tree. Call once, after the last Add*. With `drawn_only`, a
  // node that FlameBoxDrawn() rejects for `scale` and `min_width` is dropped with its subtree
  // as soon as its total is known (its weight stays in its ancestors): a big profile has far
  // more nodes than a graph can show, and keeping them all was most of the memory and time.
  // Such a tree has no self weights for the nodes dropped, so it is for one graph, not a diff.
  void Finish(bool drawn_only = false, double scale = 0, double min_width = 0);

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<uint32_t>& children() const { return children_; }
  const FlameSymbol& symbol(uint32_t id) const { return symbols_[id]; }
  uint64_t baseline_total() const { return baseline_total_; }

 private:
  // A stack of `size` elements: symbol ids in stack_symbols_ (source 0; each such stack
  // follows the one added before it), or a profile's sample frames, which
  // frame_symbols_[source - 1] turns into symbol ids. Finish() points `elements` at them.
  // Small, because the stacks are sorted: 24 bytes.
  struct Stack {
    const uint32_t* elements;
    uint64_t weight;
    uint32_t size;
    uint32_t source : 31;
    uint32_t baseline : 1;
  };

  std::vector<FlameSymbol> symbols_;
  std::unordered_map<std::string, uint32_t> symbol_ids_;  // name + '\0' + kind
  std::vector<uint32_t> stack_symbols_;  // stacks added by AddStack, back to back
  // Per profile added: its frame table's symbol ids. Its samples are not copied: the copy of
  // millions of frames (and the first touch of its pages) was a large part of the graph.
  std::vector<std::vector<uint32_t>> frame_symbols_;
  std::vector<Stack> stacks_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> children_;
  uint64_t baseline_total_ = 0;
  uint64_t total_ = 0;
};

// Whether a box of `total` samples is drawn: at least `min_width` pixels wide at `scale`
// pixels per sample. One definition for the tree's pruning and the writer. Children are never
// wider than their parent, so a box that is not drawn has no drawn descendant.
inline bool FlameBoxDrawn(uint64_t total, double scale, double min_width) {
  return total > 0 && static_cast<double>(total) * scale >= min_width;
}

// `text` made safe for an XML document: control characters become spaces, bytes that are not
// valid UTF-8 become U+FFFD. Not async-signal-safe.
std::string CleanXmlText(std::string_view text);
// A box's name: `name` cleaned, without surrounding spaces, "[unknown]" when nothing is left.
// Not async-signal-safe.
std::string CleanFlameName(std::string_view name);
// Appends `text` (already clean) with &, <, > and " escaped. Not async-signal-safe.
void AppendXmlEscaped(std::string& out, std::string_view text);

// The box colour of a symbol: a stable hash of the name picks a shade in the palette of its
// kind (warm for native code, aqua for inlined functions, grey for the profiler's own frames).
// Writes "rgb(r,g,b)". Not async-signal-safe.
void AppendFlameColor(std::string& out, const FlameSymbol& symbol);

// The CSS and JavaScript embedded in every flame graph: exporters/resources/flame.css and
// flame.js, made into these arrays at build time (cmake/embed.cmake). Self-contained on
// purpose: the file is mailed, attached to bug reports and opened from disk, so it loads
// nothing. Their bytes go into every graph as they are, so a comment added to those files
// changes every golden; the why of the script is here instead.
//
// The script reads each box's exact position in samples (data-x, data-w) and depth (data-d)
// once, then zooms and searches on those integers. flamegraph.pl's script works on the
// rounded pixel widths, which makes its "Matched" share drift on big profiles.
extern const char kFlameSvgStyle[];
extern const char kFlameSvgScript[];

}  // namespace inprof::internal

#endif  // INPROF_EXPORTERS_FLAME_SVG_H_
