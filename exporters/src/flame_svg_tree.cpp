// Stacks merged into the flame graph's tree, and the text clean-up its names need.
#include <algorithm>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "flame_svg.h"
#include "inprof/profile.h"
#include "stacks.h"

namespace inprof::internal {
namespace {

constexpr std::string_view kUnknown = "[unknown]";
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

// Length of the valid UTF-8 sequence at the start of `text`, 0 if it is not one (overlong
// forms, surrogates and code points past U+10FFFF are rejected, as XML parsers do).
size_t Utf8SequenceLength(std::string_view text) {
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
  if (text.size() < length) return 0;
  if (byte(1) < min || byte(1) > max) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

}  // namespace

std::string CleanXmlText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      // XML 1.0 allows no control characters but tab, LF and CR; none belongs in a name.
      out += c < 0x20 || c == 0x7f ? ' ' : static_cast<char>(c);
      ++i;
      continue;
    }
    const size_t length = Utf8SequenceLength(text.substr(i));
    if (length == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

void AppendXmlEscaped(std::string& out, std::string_view text) {
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char* entity = nullptr;
    switch (text[i]) {
      case '&':
        entity = "&amp;";
        break;
      case '<':
        entity = "&lt;";
        break;
      case '>':
        entity = "&gt;";
        break;
      case '"':
        entity = "&quot;";
        break;
      default:
        continue;
    }
    out.append(text.substr(start, i - start));
    out += entity;
    start = i + 1;
  }
  out.append(text.substr(start));
}

FlameTree::FlameTree() {
  nodes_.emplace_back();  // the root
  nodes_[0].symbol = InternSymbol("all", FrameKind::kSynthetic);
}

std::string CleanFlameName(std::string_view name) {
  std::string clean = CleanXmlText(name);
  TrimSpaces(clean);
  if (clean.empty()) clean = kUnknown;
  return clean;
}

uint32_t FlameTree::InternSymbol(std::string_view name, FrameKind kind) {
  // Keyed by the cleaned name, so names that differ only in what cleaning removes are one box.
  std::string clean = CleanFlameName(name);
  std::string key = clean;
  key += '\0';
  key += static_cast<char>('0' + static_cast<int>(kind));
  auto [it, added] = symbol_ids_.try_emplace(std::move(key), 0);
  if (added) {
    it->second = static_cast<uint32_t>(symbols_.size());
    FlameSymbol symbol;
    symbol.name = std::move(clean);
    AppendXmlEscaped(symbol.escaped, symbol.name);
    symbol.kind = kind;
    symbols_.push_back(std::move(symbol));
  }
  return it->second;
}

void FlameTree::AddStack(const uint32_t* symbols, size_t count, uint64_t weight, bool baseline) {
  if (weight == 0) return;
  if (!baseline) total_ = SaturatingAdd(total_, weight);
  stacks_.push_back({nullptr, weight, static_cast<uint32_t>(count), 0, baseline});
  stack_symbols_.insert(stack_symbols_.end(), symbols, symbols + count);
}

void FlameTree::AddProfile(const Profile& profile, size_t event, bool baseline, bool lines) {
  // Each frame of the table becomes a symbol once; samples are then lists of integers.
  std::vector<uint32_t>& frame_symbols = frame_symbols_.emplace_back();
  const auto source = static_cast<uint32_t>(frame_symbols_.size());
  frame_symbols.reserve(profile.frames.size());
  for (const Frame& frame : profile.frames) {
    std::string name = frame.function;
    // perf.log frames without a symbol are known only by their place in the source.
    if (name.empty() && frame.has_source()) {
      name = frame.file + ":" + std::to_string(frame.line);
    } else if (lines && frame.has_source()) {
      name += " (" + frame.file + ":" + std::to_string(frame.line) + ")";
    }
    frame_symbols.push_back(InternSymbol(name, frame.kind));
  }
  const uint32_t unknown = InternSymbol(kUnknown, FrameKind::kSynthetic);
  stacks_.reserve(stacks_.size() + profile.samples.size());
  std::vector<uint32_t> stack;
  for (const Sample& sample : profile.samples) {
    const uint64_t weight = SampleWeight(sample, event);
    if (weight == 0) continue;
    const bool in_table =
        std::all_of(sample.frames.begin(), sample.frames.end(),
                    [&](uint32_t index) { return index < frame_symbols.size(); });
    if (in_table && !sample.frames.empty()) {
      if (!baseline) total_ = SaturatingAdd(total_, weight);
      stacks_.push_back(
          {sample.frames.data(), weight, static_cast<uint32_t>(sample.frames.size()), source,
           baseline});
      continue;
    }
    // A frame index past the table is drawn as "[unknown]"; a sample with no frames still
    // cost time, so it keeps its weight visible as one.
    stack.clear();
    for (uint32_t index : sample.frames) {
      stack.push_back(index < frame_symbols.size() ? frame_symbols[index] : unknown);
    }
    if (stack.empty()) stack.push_back(unknown);
    AddStack(stack.data(), stack.size(), weight, baseline);
  }
}

void FlameTree::Finish(bool drawn_only, double scale, double min_width) {
  // Rank symbols once so that ordering stacks compares integers, not strings.
  std::vector<uint32_t> order(symbols_.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (symbols_[a].name != symbols_[b].name) return symbols_[a].name < symbols_[b].name;
    return symbols_[a].kind < symbols_[b].kind;
  });
  std::vector<uint32_t> rank(symbols_.size());
  for (size_t i = 0; i < order.size(); ++i) rank[order[i]] = static_cast<uint32_t>(i);
  // Per source, from an element straight to its symbol's rank: stack_symbols_ holds symbol
  // ids, a profile's samples its frame indices.
  std::vector<std::vector<uint32_t>> frame_ranks(frame_symbols_.size());
  std::vector<const uint32_t*> ranks{rank.data()};
  for (size_t s = 0; s < frame_symbols_.size(); ++s) {
    frame_ranks[s].reserve(frame_symbols_[s].size());
    for (uint32_t symbol : frame_symbols_[s]) frame_ranks[s].push_back(rank[symbol]);
    ranks.push_back(frame_ranks[s].data());
  }
  size_t frames = 0;
  size_t owned = 0;  // where the next stack of stack_symbols_ begins
  for (Stack& stack : stacks_) {
    if (stack.source == 0) {
      stack.elements = stack_symbols_.data() + owned;
      owned += stack.size;
    }
    frames += stack.size;
  }
  // The rank of a stack's symbol at `level`.
  const auto at = [&ranks](const Stack& stack, size_t level) {
    return ranks[stack.source][stack.elements[level]];
  };
  std::sort(stacks_.begin(), stacks_.end(), [&](const Stack& a, const Stack& b) {
    const uint32_t size = std::min(a.size, b.size);
    for (uint32_t i = 0; i < size; ++i) {
      if (at(a, i) != at(b, i)) return at(a, i) < at(b, i);
    }
    return a.size < b.size;
  });

  // How many leading symbols each stack shares with the one before it (0 for the first).
  // Sorted, the stacks below one node are a run in which every neighbour shares at least the
  // node's path, so these also give each node's stacks, hence its total, before it is made.
  std::vector<uint32_t> shared(stacks_.size(), 0);
  for (size_t k = 1; k < stacks_.size(); ++k) {
    const Stack& x = stacks_[k - 1];
    const Stack& y = stacks_[k];
    const uint32_t size = std::min(x.size, y.size);
    uint32_t same = 0;
    while (same < size && at(x, same) == at(y, same)) ++same;
    shared[k] = same;
  }
  const auto drawn_weight = [](const Stack& stack) { return stack.baseline ? 0 : stack.weight; };

  // Merge in that order: the path of the previous stack is kept, and a stack only adds the
  // nodes past the prefix it shares with it.
  // At most one node per frame; reserved so that growing never copies a large tree.
  nodes_.reserve(nodes_.size() + frames);
  std::vector<uint32_t> path;  // node per level of the previous stack
  // Leaves the levels of `path` past `keep`: their totals are final. Nodes come out in
  // preorder, so a node left last is the first of the nodes_ tail that is its subtree.
  // next_x[d]: where the next node of depth d starts, its siblings before it being final.
  // Placed here rather than by the writer, because a dropped box still takes its width.
  std::vector<uint64_t> next_x(2, 0);
  const auto leave = [&](size_t keep) {
    for (size_t level = path.size(); level-- > keep;) {
      const uint32_t n = path[level];
      const Node& node = nodes_[n];
      next_x[node.depth] = node.x + node.total;
      if (drawn_only && !FlameBoxDrawn(node.total, scale, min_width)) nodes_.resize(n);
    }
    path.resize(keep);
  };
  // With `drawn_only`, the totals the nodes of stacks_[k] from level `from` on will have:
  // the weights of the run of stacks that share each level's path. A node that will not be
  // drawn is then never made, nor anything below it: most nodes of a big profile are such,
  // and making them only to drop them was most of the merge.
  std::vector<uint64_t> totals;
  const auto future_totals = [&](size_t k, size_t from) {
    const uint32_t size = stacks_[k].size;
    totals.assign(size, 0);
    uint64_t sum = drawn_weight(stacks_[k]);
    size_t open = size;  // levels [from, open) still take the stacks that follow
    for (size_t j = k + 1; j < stacks_.size() && shared[j] > from; ++j) {
      for (; open > shared[j]; --open) totals[open - 1] = sum;
      sum = SaturatingAdd(sum, drawn_weight(stacks_[j]));
    }
    for (; open > from; --open) totals[open - 1] = sum;
  };
  for (size_t k = 0; k < stacks_.size(); ++k) {
    const Stack& stack = stacks_[k];
    // Past the end of `path`, the previous stack went on into a node not drawn: so does this
    // one when it shares that node. Its weight counts in the ancestors only.
    if (shared[k] > path.size()) {
      if (stack.baseline) {
        baseline_total_ = SaturatingAdd(baseline_total_, stack.weight);
        continue;
      }
      nodes_[0].total = SaturatingAdd(nodes_[0].total, stack.weight);
      for (uint32_t n : path) nodes_[n].total = SaturatingAdd(nodes_[n].total, stack.weight);
      continue;
    }
    const size_t same = shared[k];
    leave(same);
    if (drawn_only && same < stack.size) future_totals(k, same);
    bool whole = true;
    for (size_t i = same; i < stack.size; ++i) {
      Node node;
      node.symbol = order[at(stack, i)];
      node.parent = i == 0 ? 0 : path[i - 1];
      node.depth = static_cast<uint32_t>(i + 1);
      if (next_x.size() < i + 3) next_x.resize(i + 3, 0);
      node.x = next_x[i + 1];
      if (drawn_only && !FlameBoxDrawn(totals[i], scale, min_width)) {
        // Left at once, as leave() would: its width still pushes its later siblings right.
        next_x[i + 1] = node.x + totals[i];
        whole = false;
        break;
      }
      next_x[i + 2] = node.x;
      path.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(node);
    }
    if (stack.baseline) {
      if (whole) {
        Node& leaf = path.empty() ? nodes_[0] : nodes_[path.back()];
        leaf.baseline_self = SaturatingAdd(leaf.baseline_self, stack.weight);
      }
      baseline_total_ = SaturatingAdd(baseline_total_, stack.weight);
      continue;
    }
    if (whole) {
      Node& leaf = path.empty() ? nodes_[0] : nodes_[path.back()];
      leaf.self = SaturatingAdd(leaf.self, stack.weight);
    }
    nodes_[0].total = SaturatingAdd(nodes_[0].total, stack.weight);
    for (uint32_t n : path) nodes_[n].total = SaturatingAdd(nodes_[n].total, stack.weight);
  }
  leave(0);
  std::vector<uint32_t>().swap(stack_symbols_);
  std::vector<Stack>().swap(stacks_);
  std::vector<std::vector<uint32_t>>().swap(frame_symbols_);

  // Children grouped by parent with a stable counting sort: nodes were created in preorder,
  // so each group is already in name order.
  for (size_t i = 1; i < nodes_.size(); ++i) ++nodes_[nodes_[i].parent].child_count;
  uint32_t next = 0;
  for (Node& node : nodes_) {
    node.first_child = next;
    next += node.child_count;
  }
  children_.assign(nodes_.size() - 1, 0);
  std::vector<uint32_t> filled(nodes_.size(), 0);
  for (size_t i = 1; i < nodes_.size(); ++i) {
    const uint32_t parent = nodes_[i].parent;
    children_[nodes_[parent].first_child + filled[parent]++] = static_cast<uint32_t>(i);
  }
}

}  // namespace inprof::internal
