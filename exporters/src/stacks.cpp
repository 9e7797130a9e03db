#include "inprof/profile.h"
#include "stacks.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <utility>
#include <vector>

namespace inprof::internal {

uint64_t SampleWeight(const Sample& sample, size_t event) {
  if (event >= sample.weights.size() || sample.weights[event] <= 0) return 0;
  return static_cast<uint64_t>(sample.weights[event]);
}

void ReplaceControlChars(std::string& text) {
  for (char& c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = ' ';
  }
}

void TrimSpaces(std::string& text) {
  const size_t last = text.find_last_not_of(' ');
  if (last == std::string::npos) {
    text.clear();
    return;
  }
  text.erase(last + 1);
  text.erase(0, text.find_first_not_of(' '));
}

void StackMerger::Add(std::string stack, uint64_t weight) {
  if (weight == 0) return;
  uint64_t& total = counts_[std::move(stack)];
  // Saturate rather than wrap: a wrapped count would be a small, plausible-looking lie.
  total = weight > std::numeric_limits<uint64_t>::max() - total
              ? std::numeric_limits<uint64_t>::max()
              : total + weight;
}

void StackMerger::WriteSorted(std::ostream& out) const {
  std::vector<const std::pair<const std::string, uint64_t>*> lines;
  lines.reserve(counts_.size());
  for (const auto& entry : counts_) lines.push_back(&entry);
  // std::string compares as unsigned bytes: the order does not depend on the locale.
  std::sort(lines.begin(), lines.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  for (const auto* line : lines) out << line->first << ' ' << line->second << '\n';
}

ProfileAssembler::ProfileAssembler(std::string event_name, std::string unit) {
  EventInfo event;
  event.name = std::move(event_name);
  event.unit = std::move(unit);
  profile_.events.push_back(std::move(event));
}

void ProfileAssembler::AddSample(std::vector<uint32_t> frames, int64_t weight) {
  int64_t& total = profile_.events[0].total_weight;
  if (__builtin_add_overflow(total, weight, &total)) total = std::numeric_limits<int64_t>::max();
  profile_.samples.push_back({std::move(frames), {weight}});
}

bool SplitFrameLocation(std::string_view text, std::string_view* function, std::string_view* file,
                        uint32_t* line) {
  const size_t open = text.rfind(" (");
  if (!text.ends_with(')') || open == std::string_view::npos) return false;
  const std::string_view location = text.substr(open + 2, text.size() - open - 3);
  const size_t colon = location.rfind(':');
  int64_t number = 0;
  if (colon == std::string_view::npos || colon == 0 ||
      !ParseCount(location.substr(colon + 1), &number) || number <= 0 || number > 0xffffffff) {
    return false;
  }
  *function = text.substr(0, open);
  *file = location.substr(0, colon);
  *line = static_cast<uint32_t>(number);
  return true;
}

bool ParseCount(std::string_view text, int64_t* count) {
  if (text.empty()) return false;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), *count);
  return r.ec == std::errc() && r.ptr == text.data() + text.size() && *count >= 0;
}

}  // namespace inprof::internal
