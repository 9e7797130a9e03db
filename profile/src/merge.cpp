// Processes' profiles merged into one (merge.h).
#include "inprof/merge.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "inprof/saturating.h"

namespace inprof {
namespace {

// A root name as a label value: labels hold no control characters, at most 1024 bytes (the
// runtime's own bound on values).
std::string LabelText(const std::string& name) {
  std::string out = name.substr(0, 1024);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

// Appends `value` to the `separator`-joined list `*list` unless it is empty or listed.
void AddDistinct(std::string* list, const std::string& value, std::string_view separator) {
  if (value.empty()) return;
  std::string_view rest = *list;
  while (!rest.empty()) {
    const size_t end = rest.find(separator);
    if (rest.substr(0, end) == value) return;
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + separator.size());
  }
  if (!list->empty()) *list += separator;
  *list += value;
}

}  // namespace

Profile MergeProfiles(std::vector<Profile> profiles, const std::vector<std::string>& root_names,
                      const std::string& process_label) {
  Profile merged;
  if (profiles.empty()) return merged;

  merged.meta = profiles[0].meta;
  const int64_t start = merged.meta.start_time_ns;
  // Saturating: the times come from files, and a read profile may hold any int64.
  int64_t end = SaturatingAdd(start, merged.meta.duration_ns);
  for (const Profile& p : profiles) {
    if (p.meta.start_time_ns != 0) {
      end = std::max(end, SaturatingAdd(p.meta.start_time_ns, p.meta.duration_ns));
    }
  }
  merged.meta.duration_ns = std::max(merged.meta.duration_ns, SaturatingSub(end, start));

  std::unordered_map<Frame, uint32_t, FrameHash> frame_index;
  auto intern = [&](Frame&& f) -> uint32_t {
    auto [it, added] = frame_index.try_emplace(f, static_cast<uint32_t>(merged.frames.size()));
    if (added) merged.frames.push_back(std::move(f));
    return it->second;
  };
  std::unordered_map<std::string, size_t> event_index;
  std::unordered_set<std::string> module_keys;
  std::map<std::vector<Label>, uint32_t> label_set_number;  // 1 + index in merged.label_sets
  std::set<std::pair<int64_t, std::string>> thread_names;
  size_t timed = 0;
  for (const Profile& p : profiles) timed += p.timeline.size();
  merged.timeline.reserve(timed);
  Health& health = merged.health;
  double cpu_total = 0;
  double achieved_by_cpu = 0;
  double first_achieved = 0;

  for (size_t i = 0; i < profiles.size(); ++i) {
    Profile& p = profiles[i];
    const std::string name = i < root_names.size() ? root_names[i] : std::string();

    std::vector<size_t> event_map(p.events.size());
    for (size_t e = 0; e < p.events.size(); ++e) {
      auto [it, added] = event_index.try_emplace(p.events[e].name, merged.events.size());
      if (added) {
        merged.events.push_back(p.events[e]);
        merged.events.back().total_weight = 0;
        // Earlier samples had no such event: they weigh 0 in it.
        for (Sample& s : merged.samples) s.weights.push_back(0);
      }
      event_map[e] = it->second;
    }

    std::vector<uint32_t> frame_map(p.frames.size());
    for (size_t f = 0; f < p.frames.size(); ++f) frame_map[f] = intern(std::move(p.frames[f]));
    const bool rooted = !name.empty();
    const uint32_t root = rooted ? intern(SyntheticFrame(name)) : 0;

    // Label sets by value: a set two processes had is one set. With a process label, each
    // set gets it (sorted by key, the program's own label of that key kept), and samples
    // without labels get the set of the process label alone.
    std::optional<Label> process;
    if (rooted && !process_label.empty()) process = Label{process_label, LabelText(name)};
    auto with_process = [&](std::vector<Label> set) {
      if (!process) return set;
      auto at = std::lower_bound(set.begin(), set.end(), process->key,
                                 [](const Label& l, const std::string& k) { return l.key < k; });
      if (at == set.end() || at->key != process->key) set.insert(at, *process);
      return set;
    };
    auto number = [&](std::vector<Label> set) {
      const auto next = static_cast<uint32_t>(merged.label_sets.size() + 1);
      auto [it, added] = label_set_number.try_emplace(set, next);
      if (added) merged.label_sets.push_back(std::move(set));
      return it->second;
    };
    std::vector<uint32_t> label_map(p.label_sets.size());
    for (size_t l = 0; l < p.label_sets.size(); ++l) {
      label_map[l] = number(with_process(std::move(p.label_sets[l])));
    }
    uint32_t unlabelled = 0;  // the set of the process label alone, made when first needed

    // Timed samples: this profile's samples start at `first_sample` in the merged list, its
    // times move from its own start to the merged one.
    const auto first_sample = static_cast<uint32_t>(merged.samples.size());
    const int64_t shift =
        start != 0 && p.meta.start_time_ns != 0 ? SaturatingSub(p.meta.start_time_ns, start) : 0;
    for (const TimedSample& t : p.timeline) {
      if (t.sample >= p.samples.size() || t.event >= event_map.size()) continue;
      merged.timeline.push_back(TimedSample{SaturatingAdd(t.time_ns, shift),
                                            first_sample + t.sample,
                                            static_cast<uint32_t>(event_map[t.event]), t.weight});
    }

    for (const ThreadInfo& t : p.threads) {
      if (thread_names.emplace(t.tid, t.name).second) merged.threads.push_back(t);
    }

    for (Sample& s : p.samples) {
      Sample out;
      out.tid = s.tid;
      // A number past its profile's label sets is dropped rather than guessed, as frames are.
      if (s.labels != 0 && s.labels <= label_map.size()) {
        out.labels = label_map[s.labels - 1];
      } else if (process) {
        if (unlabelled == 0) unlabelled = number({*process});
        out.labels = unlabelled;
      }
      out.frames.reserve(s.frames.size() + (rooted ? 1 : 0));
      if (rooted) out.frames.push_back(root);
      for (uint32_t f : s.frames) {
        // A sample's index past its profile's frame table is kept out rather than guessed.
        if (f < frame_map.size()) out.frames.push_back(frame_map[f]);
      }
      out.weights.assign(merged.events.size(), 0);
      for (size_t e = 0; e < s.weights.size() && e < event_map.size(); ++e) {
        out.weights[event_map[e]] = SaturatingAdd(out.weights[event_map[e]], s.weights[e]);
      }
      merged.samples.push_back(std::move(out));
    }

    const Health& h = p.health;
    health.samples += h.samples;
    health.dropped += h.dropped;
    health.truncated += h.truncated;
    health.broken += h.broken;
    health.overflow += h.overflow;
    health.threads_seen += h.threads_seen;
    health.unknown_frames += h.unknown_frames;
    health.overruns += h.overruns;
    health.symbolize_seconds += h.symbolize_seconds;
    health.write_seconds += h.write_seconds;
    health.symbol_cache_hits += h.symbol_cache_hits;
    health.symbol_cache_misses += h.symbol_cache_misses;
    AddDistinct(&health.engine, h.engine, ", ");
    AddDistinct(&health.engine_reason, h.engine_reason, "; ");
    AddDistinct(&health.unwinder, h.unwinder, ", ");
    if (health.requested_hz == 0) health.requested_hz = h.requested_hz;
    if (first_achieved == 0) first_achieved = h.achieved_hz;
    double cpu = 0;
    for (const ThreadHealth& t : h.threads) cpu += t.cpu_seconds;
    if (cpu > 0) {
      cpu_total += cpu;
      achieved_by_cpu += h.achieved_hz * cpu;
    }
    health.threads.insert(health.threads.end(), h.threads.begin(), h.threads.end());
    for (const std::string& w : h.warnings) {
      health.warnings.push_back(rooted ? name + ": " + w : w);
    }

    std::unordered_set<std::string> added_here;
    for (Module& m : p.modules) {
      std::string key = m.path + '\0' + m.build_id;
      if (module_keys.count(key) != 0 && added_here.count(key) == 0) continue;
      module_keys.insert(key);
      added_here.insert(std::move(key));
      merged.modules.push_back(std::move(m));
    }
  }

  for (const Sample& s : merged.samples) {
    for (size_t e = 0; e < s.weights.size(); ++e) {
      merged.events[e].total_weight = SaturatingAdd(merged.events[e].total_weight, s.weights[e]);
    }
  }
  health.achieved_hz = cpu_total > 0 ? achieved_by_cpu / cpu_total : first_achieved;
  std::stable_sort(health.threads.begin(), health.threads.end(),
                   [](const ThreadHealth& a, const ThreadHealth& b) { return a.tid < b.tid; });
  std::stable_sort(merged.threads.begin(), merged.threads.end(),
                   [](const ThreadInfo& a, const ThreadInfo& b) { return a.tid < b.tid; });
  // Each timeline is in order, so one stable sort merges them; at equal times the earlier
  // profile's samples come first.
  SortTimeline(&merged.timeline);
  return merged;
}

}  // namespace inprof
