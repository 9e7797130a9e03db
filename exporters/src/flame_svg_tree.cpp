// Stacks merged into the flame graph's tree, and the text clean-up its names need.
#include <algorithm>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "internal/flame_svg.h"
#include "internal/stacks.h"

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

uint64_t SlotHash(uint64_t key) {
  // A multiplicative mix (splitmix64's finaliser): parents and symbols are small dense
  // integers, which would cluster in a plain modulo.
  key ^= key >> 30;
  key *= 0xbf58476d1ce4e5b9ULL;
  key ^= key >> 27;
  key *= 0x94d049bb133111ebULL;
  return key ^ (key >> 31);
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
      case '&': entity = "&amp;"; break;
      case '<': entity = "&lt;"; break;
      case '>': entity = "&gt;"; break;
      case '"': entity = "&quot;"; break;
      default: continue;
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
  slot_keys_.assign(1024, 0);
  slot_nodes_.assign(1024, 0);
}

uint32_t FlameTree::InternSymbol(std::string_view name, FrameKind kind) {
  // Keyed by the cleaned name, so names that differ only in what cleaning removes are one box.
  std::string clean = CleanXmlText(name);
  TrimSpaces(clean);
  if (clean.empty()) clean = kUnknown;
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

void FlameTree::Grow() {
  std::vector<uint64_t> keys(slot_keys_.size() * 2, 0);
  std::vector<uint32_t> values(keys.size(), 0);
  const size_t mask = keys.size() - 1;
  for (size_t i = 0; i < slot_keys_.size(); ++i) {
    if (slot_keys_[i] == 0) continue;
    size_t at = SlotHash(slot_keys_[i]) & mask;
    while (keys[at] != 0) at = (at + 1) & mask;
    keys[at] = slot_keys_[i];
    values[at] = slot_nodes_[i];
  }
  slot_keys_ = std::move(keys);
  slot_nodes_ = std::move(values);
}

uint32_t FlameTree::Child(uint32_t parent, uint32_t symbol) {
  const uint64_t key = ((static_cast<uint64_t>(parent) << 32) | symbol) + 1;
  size_t mask = slot_keys_.size() - 1;
  size_t at = SlotHash(key) & mask;
  while (slot_keys_[at] != 0) {
    if (slot_keys_[at] == key) return slot_nodes_[at];
    at = (at + 1) & mask;
  }
  const auto node = static_cast<uint32_t>(nodes_.size());
  Node child;
  child.symbol = symbol;
  child.parent = parent;
  child.depth = nodes_[parent].depth + 1;
  nodes_.push_back(child);
  slot_keys_[at] = key;
  slot_nodes_[at] = node;
  // Keep the load under one half so probes stay short.
  if (++slots_used_ * 2 > slot_keys_.size()) Grow();
  return node;
}

void FlameTree::AddStack(const uint32_t* symbols, size_t count, uint64_t weight, bool baseline) {
  if (weight == 0) return;
  size_t same = 0;
  while (same < count && same < last_symbols_.size() && last_symbols_[same] == symbols[same]) {
    ++same;
  }
  last_symbols_.resize(same);
  last_nodes_.resize(same);
  uint32_t node = same ? last_nodes_[same - 1] : 0;
  for (size_t i = same; i < count; ++i) {
    node = Child(node, symbols[i]);
    last_symbols_.push_back(symbols[i]);
    last_nodes_.push_back(node);
  }
  if (baseline) {
    nodes_[node].baseline_self = SaturatingAdd(nodes_[node].baseline_self, weight);
    baseline_total_ = SaturatingAdd(baseline_total_, weight);
    return;
  }
  nodes_[node].self = SaturatingAdd(nodes_[node].self, weight);
  nodes_[0].total = SaturatingAdd(nodes_[0].total, weight);
  for (uint32_t n : last_nodes_) nodes_[n].total = SaturatingAdd(nodes_[n].total, weight);
}

void FlameTree::AddProfile(const Profile& profile, size_t event, bool baseline) {
  // Each frame of the table becomes a symbol once; samples are then lists of integers.
  std::vector<uint32_t> frame_symbols;
  frame_symbols.reserve(profile.frames.size());
  for (const Frame& frame : profile.frames) {
    std::string name = frame.function;
    // perf.log frames without a symbol are known only by their place in the source.
    if (name.empty() && frame.has_source()) name = frame.file + ":" + std::to_string(frame.line);
    frame_symbols.push_back(InternSymbol(name, frame.kind));
  }
  const uint32_t unknown = InternSymbol(kUnknown, FrameKind::kSynthetic);
  std::vector<uint32_t> stack;
  for (const Sample& sample : profile.samples) {
    const uint64_t weight = SampleWeight(sample, event);
    if (weight == 0) continue;
    stack.clear();
    for (uint32_t index : sample.frames) {
      stack.push_back(index < frame_symbols.size() ? frame_symbols[index] : unknown);
    }
    // A sample with no frames still cost time; keep its weight visible.
    if (stack.empty()) stack.push_back(unknown);
    AddStack(stack.data(), stack.size(), weight, baseline);
  }
}

void FlameTree::Finish() {
  // Rank symbols once so that sorting children compares integers, not strings.
  std::vector<uint32_t> order(symbols_.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (symbols_[a].name != symbols_[b].name) return symbols_[a].name < symbols_[b].name;
    return symbols_[a].kind < symbols_[b].kind;
  });
  std::vector<uint32_t> rank(symbols_.size());
  for (size_t i = 0; i < order.size(); ++i) rank[order[i]] = static_cast<uint32_t>(i);

  // Children grouped by parent with a counting sort (a child is always created after its
  // parent), then each group sorted by rank.
  for (Node& node : nodes_) node.child_count = 0;
  for (size_t i = 1; i < nodes_.size(); ++i) ++nodes_[nodes_[i].parent].child_count;
  uint32_t next = 0;
  for (Node& node : nodes_) {
    node.first_child = next;
    next += node.child_count;
  }
  children_.assign(nodes_.size() > 0 ? nodes_.size() - 1 : 0, 0);
  std::vector<uint32_t> filled(nodes_.size(), 0);
  for (size_t i = 1; i < nodes_.size(); ++i) {
    const Node& parent = nodes_[nodes_[i].parent];
    children_[parent.first_child + filled[nodes_[i].parent]++] = static_cast<uint32_t>(i);
  }
  for (const Node& node : nodes_) {
    if (node.child_count < 2) continue;
    auto begin = children_.begin() + node.first_child;
    std::sort(begin, begin + node.child_count,
              [&](uint32_t a, uint32_t b) { return rank[nodes_[a].symbol] < rank[nodes_[b].symbol]; });
  }
}

}  // namespace inprof::internal
