// A profile restricted to a time range, to threads and to labels, with frames hidden from
// its stacks (ProfileFilter).
//
// A time range is answered from the timeline alone: a Sample's weights are the sum of its
// timed samples, so the weights inside the range are recomputed from the timed samples that
// fall in it, and a Sample none of them falls into is dropped. Threads and labels select
// whole Samples (they are part of what makes two samples one). What is left is compacted —
// frames and threads no kept sample uses are removed — so every later pass (the annotations,
// a flame graph, a file written from it) sees only the selection. Label sets stay whole:
// they are few, and which label keys the profile has must stay known after a selection (a
// total per value of a key a selection never set is "all without it", not "no such key").
//
// A thread or label the profile does not know is an error, not an empty result: a mistyped
// thread name would otherwise read as "this thread did nothing", and the message lists what
// the profile has. A known thread or label that took no sample in the range is an empty
// result; saying so is the caller's business.
//
// Hiding (pprof's -hide) rewrites stacks after the selection: a hidden frame is removed, so
// a sample's weight lands on the next kept frame toward the root and self weight moves to
// the caller's call site (that frame's own line). It never drops a sample: a stack left with
// no frame gets "[hidden]", which every view shows and counts, so each event's total is as it
// was. pprof leaves such a sample with an empty stack instead; our views would count it in
// the total and show it nowhere, which reads as weight gone missing.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "inprof/profile_filter.h"
#include "inprof/saturating.h"

namespace inprof {
namespace {

// How many threads or label values an error message lists before "and N more".
constexpr size_t kListed = 20;

std::string Seconds(int64_t ns) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.3f s", static_cast<double>(ns) / 1e9);
  return buffer;
}

// "the profile of /usr/bin/w" or "the profile".
std::string ProfileName(const Profile& profile) {
  return profile.meta.program.empty() ? "the profile" : "the profile of " + profile.meta.program;
}

std::string Listed(const std::vector<std::string>& items) {
  std::string text;
  for (size_t i = 0; i < items.size() && i < kListed; ++i) text += (i ? ", " : "") + items[i];
  if (items.size() > kListed) text += ", and " + std::to_string(items.size() - kListed) + " more";
  return text;
}

bool ParseTid(const std::string& text, int64_t* tid) {
  if (text.empty() || text.size() > 18) return false;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), *tid);
  return r.ec == std::errc() && r.ptr == text.data() + text.size() && *tid > 0;
}

// The tids `filter.threads` names, or an error naming the first entry that matches no thread.
Status SelectThreads(const Profile& in, const ProfileFilter& filter,
                     std::unordered_set<int64_t>* selected) {
  // Every thread the profile knows: named ones, and tids samples carry without a name.
  std::map<int64_t, std::string> known;
  for (const ThreadInfo& t : in.threads) known[t.tid] = t.name;
  for (const Sample& s : in.samples) {
    if (s.tid != 0) known.try_emplace(s.tid);
  }
  if (known.empty()) {
    return Status::NotFound(ProfileName(in) +
                            " does not say which thread took each sample, so it cannot be "
                            "filtered by thread");
  }
  for (const std::string& wanted : filter.threads) {
    int64_t tid = 0;
    const bool numeric = ParseTid(wanted, &tid);
    bool found = false;
    for (const auto& [id, name] : known) {
      if (name == wanted || (numeric && id == tid)) {
        selected->insert(id);
        found = true;
      }
    }
    if (found) continue;
    std::vector<std::string> names;
    for (const auto& [id, name] : known) {
      names.push_back(name.empty() ? std::to_string(id) : name + " (" + std::to_string(id) + ")");
    }
    return Status::NotFound("no thread '" + wanted + "' in " + ProfileName(in) + " (its " +
                            std::to_string(known.size()) + " thread" +
                            (known.size() == 1 ? "" : "s") + ": " + Listed(names) + ")");
  }
  return Status::Ok();
}

// Which label sets (by index) hold every label of `filter`, or an error naming the first
// label no sample has.
Status SelectLabelSets(const Profile& in, const ProfileFilter& filter, std::vector<bool>* chosen) {
  for (const Label& wanted : filter.labels) {
    std::set<std::string> keys, values;
    bool found = false;
    for (const auto& set : in.label_sets) {
      for (const Label& label : set) {
        keys.insert(label.key);
        if (label.key != wanted.key) continue;
        values.insert(label.value);
        found |= label.value == wanted.value;
      }
    }
    if (found) continue;
    if (keys.empty()) {
      return Status::NotFound(ProfileName(in) + " has no labels, so no sample has " + wanted.key +
                              "=" + wanted.value);
    }
    if (values.empty()) {
      return Status::NotFound(
          "no label '" + wanted.key + "' in " + ProfileName(in) +
          " (its label keys: " + Listed(std::vector<std::string>(keys.begin(), keys.end())) + ")");
    }
    return Status::NotFound("no sample has " + wanted.key + "=" + wanted.value + " in " +
                            ProfileName(in) + " (values of " + wanted.key + ": " +
                            Listed(std::vector<std::string>(values.begin(), values.end())) + ")");
  }
  chosen->assign(in.label_sets.size(), false);
  for (size_t i = 0; i < in.label_sets.size(); ++i) {
    bool all = true;
    for (const Label& wanted : filter.labels) {
      all = all && std::find(in.label_sets[i].begin(), in.label_sets[i].end(), wanted) !=
                       in.label_sets[i].end();
    }
    (*chosen)[i] = all;
  }
  return Status::Ok();
}

// The longest part of a function name a hide pattern is matched against. libstdc++'s
// std::regex recurses once per character a quantifier consumes, so a pattern such as
// "(a|b)*" on a name of 100,000 characters (a hostile or generated profile) would overflow
// the stack; demangled C++ names past 4 KiB are template expansions whose start says what
// they are, which is what patterns anchored at the start ("^std::") look at.
constexpr size_t kMaxMatchedName = 4096;

StatusOr<std::regex> CompileHide(const std::string& pattern) {
  try {
    return std::regex(pattern, std::regex::ECMAScript | std::regex::nosubs | std::regex::optimize);
  } catch (const std::regex_error& e) {
    return Status::InvalidArgument("'" + pattern + "' is not a regular expression: " + e.what());
  }
}

// Whether a hide pattern matches `name` (at most its first kMaxMatchedName characters).
// Throws std::regex_error when the matcher gives up (error_complexity, error_stack).
bool Matches(const std::vector<std::regex>& compiled, std::string_view name) {
  name = name.substr(0, kMaxMatchedName);
  for (const std::regex& re : compiled) {
    if (std::regex_search(name.begin(), name.end(), re)) return true;
  }
  return false;
}

// Which of `in`'s frames a hide pattern matches, by index into in.frames: by the full name,
// or by `short_name`'s form of it when that is given. Each distinct name is matched once
// (a function has a frame per sampled line).
Status HiddenFrames(const Profile& in, const ProfileFilter& filter, std::vector<bool>* hidden) {
  std::vector<std::regex> compiled;
  for (const std::string& pattern : filter.hide) {
    StatusOr<std::regex> re = CompileHide(pattern);
    if (!re.ok()) return re.status();
    compiled.push_back(std::move(*re));
  }
  hidden->assign(in.frames.size(), false);
  std::unordered_map<std::string_view, bool> by_name;
  for (size_t f = 0; f < in.frames.size(); ++f) {
    const std::string& name = in.frames[f].function;
    auto [it, fresh] = by_name.try_emplace(name, false);
    if (fresh) {
      try {
        it->second = Matches(compiled, name) ||
                     (filter.short_name && Matches(compiled, filter.short_name(name)));
      } catch (const std::regex_error& e) {
        return Status::InvalidArgument("a hide pattern could not be matched against '" +
                                       name.substr(0, 200) + "': " + e.what());
      }
    }
    (*hidden)[f] = it->second;
  }
  return Status::Ok();
}

// Rewrites stacks without the hidden frames, adding the frames that needs after in.frames:
// stack entries index in.frames, then `added`; an index past in.frames in the input becomes
// UINT32_MAX (unknown) so that it cannot land on an added frame.
class Hider {
 public:
  Hider(const Profile& in, std::vector<bool> hidden)
      : in_(in), hidden_(std::move(hidden)), native_copy_(in.frames.size(), UINT32_MAX) {}

  std::vector<uint32_t> Stack(const std::vector<uint32_t>& frames) {
    std::vector<uint32_t> kept;
    kept.reserve(frames.size());
    const size_t base = in_.frames.size();
    // The machine frame (a native frame and the inlined frames after it) lost its native frame.
    bool headless = false;
    for (uint32_t f : frames) {
      if (f >= base) {
        kept.push_back(UINT32_MAX);
        headless = false;
        continue;
      }
      const Frame& frame = in_.frames[f];
      if (frame.kind != FrameKind::kInlined) headless = false;
      if (hidden_[f]) {
        headless = headless || frame.kind == FrameKind::kNative;
        continue;
      }
      if (headless) {
        // An inlined frame says it is part of the frame before it; that one is gone, and the
        // frame before it now is another machine frame (pprof would fold it into the wrong
        // location). It is now its machine frame's first: a native frame.
        kept.push_back(NativeCopy(f));
        headless = false;
        continue;
      }
      kept.push_back(f);
    }
    if (kept.empty() && !frames.empty()) {
      if (hidden_frame_ == UINT32_MAX) hidden_frame_ = Add(SyntheticFrame("[hidden]"));
      kept.push_back(hidden_frame_);
    }
    return kept;
  }

  std::vector<Frame>& added() { return added_; }

 private:
  uint32_t NativeCopy(uint32_t f) {
    if (native_copy_[f] == UINT32_MAX) {
      Frame copy = in_.frames[f];
      copy.kind = FrameKind::kNative;
      native_copy_[f] = Add(std::move(copy));
    }
    return native_copy_[f];
  }

  uint32_t Add(Frame frame) {
    added_.push_back(std::move(frame));
    return static_cast<uint32_t>(in_.frames.size() + added_.size() - 1);
  }

  const Profile& in_;
  const std::vector<bool> hidden_;
  std::vector<uint32_t> native_copy_;  // by in.frames index: its native copy, once made
  uint32_t hidden_frame_ = UINT32_MAX;
  std::vector<Frame> added_;
};

}  // namespace

Status CheckHidePattern(const std::string& pattern) { return CompileHide(pattern).status(); }

Status FilterProfile(const Profile& in, const ProfileFilter& filter, Profile* out) {
  if (filter.empty()) {
    *out = in;
    return Status::Ok();
  }
  const bool timed = filter.from_ns || filter.to_ns;
  if (timed && in.timeline.empty()) {
    return Status::InvalidArgument(
        ProfileName(in) + " has no sample times (only totals per stack), so it has no time range");
  }
  const int64_t from = filter.from_ns.value_or(std::numeric_limits<int64_t>::min());
  const int64_t to = filter.to_ns.value_or(std::numeric_limits<int64_t>::max());
  if (from >= to) {
    return Status::InvalidArgument("the time range is empty: " + Seconds(from) + " is not before " +
                                   Seconds(to));
  }
  std::unordered_set<int64_t> threads;
  if (!filter.threads.empty()) {
    if (Status s = SelectThreads(in, filter, &threads); !s.ok()) return s;
  }
  std::vector<bool> label_sets;
  if (!filter.labels.empty()) {
    if (Status s = SelectLabelSets(in, filter, &label_sets); !s.ok()) return s;
  }

  const size_t events = in.events.size();
  std::vector<bool> selected(in.samples.size(), false);
  for (size_t i = 0; i < in.samples.size(); ++i) {
    const Sample& s = in.samples[i];
    bool keep = filter.threads.empty() || threads.count(s.tid) > 0;
    if (!filter.labels.empty()) {
      keep = keep && s.labels != 0 && s.labels <= label_sets.size() && label_sets[s.labels - 1];
    }
    selected[i] = keep;
  }

  // The kept samples' weights: recomputed from the timed samples in the range, or as they were.
  std::vector<std::vector<int64_t>> weights(in.samples.size());
  std::vector<TimedSample> timeline;
  for (const TimedSample& t : in.timeline) {
    if (t.sample >= in.samples.size() || t.event >= events || !selected[t.sample]) continue;
    if (t.time_ns < from || t.time_ns >= to) continue;
    timeline.push_back(t);
    if (!timed) continue;
    std::vector<int64_t>& w = weights[t.sample];
    if (w.empty()) w.assign(events, 0);
    AddSaturating(w[t.event], t.weight);
  }
  if (!timed) {
    for (size_t i = 0; i < in.samples.size(); ++i) {
      if (!selected[i]) continue;
      weights[i] = in.samples[i].weights;
      weights[i].resize(events, 0);
    }
  }

  // The kept samples' stacks: as they were, or without the hidden frames. Entries index
  // `table`: in.frames, then the frames hiding added.
  std::vector<std::vector<uint32_t>> stacks(in.samples.size());
  std::vector<Frame> added;
  auto weightless = [](const std::vector<int64_t>& w) {
    return std::all_of(w.begin(), w.end(), [](int64_t v) { return v == 0; });
  };
  if (filter.hide.empty()) {
    for (size_t i = 0; i < in.samples.size(); ++i) {
      if (weightless(weights[i])) continue;
      stacks[i] = in.samples[i].frames;
      // A frame index past the table stays past it (every reader of a profile treats such a
      // frame as unknown); it must not land on a kept frame.
      for (uint32_t& f : stacks[i]) {
        if (f >= in.frames.size()) f = UINT32_MAX;
      }
    }
  } else {
    std::vector<bool> hidden;
    if (Status s = HiddenFrames(in, filter, &hidden); !s.ok()) return s;
    Hider hider(in, std::move(hidden));
    for (size_t i = 0; i < in.samples.size(); ++i) {
      if (!weightless(weights[i])) stacks[i] = hider.Stack(in.samples[i].frames);
    }
    added = std::move(hider.added());
  }
  const size_t table = in.frames.size() + added.size();
  auto frame_at = [&](size_t f) -> const Frame& {
    return f < in.frames.size() ? in.frames[f] : added[f - in.frames.size()];
  };

  Profile result;
  result.meta = in.meta;
  result.health = in.health;
  result.modules = in.modules;
  result.events = in.events;
  for (EventInfo& e : result.events) e.total_weight = 0;
  std::vector<uint32_t> sample_index(in.samples.size(), UINT32_MAX);
  std::vector<uint32_t> frame_index(table, UINT32_MAX);
  std::vector<bool> frame_used(table, false);
  std::unordered_set<int64_t> tids;
  for (size_t i = 0; i < in.samples.size(); ++i) {
    if (weightless(weights[i])) continue;
    for (uint32_t f : stacks[i]) {
      if (f < table) frame_used[f] = true;
    }
    tids.insert(in.samples[i].tid);
  }
  for (size_t f = 0; f < table; ++f) {
    if (!frame_used[f]) continue;
    frame_index[f] = static_cast<uint32_t>(result.frames.size());
    result.frames.push_back(frame_at(f));
  }
  result.label_sets = in.label_sets;
  for (const ThreadInfo& t : in.threads) {
    if (tids.count(t.tid) > 0) result.threads.push_back(t);
  }
  // Samples that hiding made alike (same stack, thread and labels) become one, as the model
  // wants; without hiding they stay as they were.
  std::map<std::tuple<std::vector<uint32_t>, int64_t, uint32_t>, uint32_t> merged;
  for (size_t i = 0; i < in.samples.size(); ++i) {
    std::vector<int64_t>& w = weights[i];
    if (weightless(w)) continue;
    const Sample& s = in.samples[i];
    Sample kept;
    kept.frames.reserve(stacks[i].size());
    for (uint32_t f : stacks[i]) kept.frames.push_back(f < table ? frame_index[f] : UINT32_MAX);
    kept.tid = s.tid;
    kept.labels = s.labels <= in.label_sets.size() ? s.labels : 0;
    for (size_t e = 0; e < events; ++e) AddSaturating(result.events[e].total_weight, w[e]);
    if (!filter.hide.empty()) {
      auto [it, fresh] = merged.try_emplace({kept.frames, kept.tid, kept.labels},
                                            static_cast<uint32_t>(result.samples.size()));
      if (!fresh) {
        std::vector<int64_t>& into = result.samples[it->second].weights;
        for (size_t e = 0; e < events; ++e) AddSaturating(into[e], w[e]);
        sample_index[i] = it->second;
        continue;
      }
    }
    kept.weights = std::move(w);
    sample_index[i] = static_cast<uint32_t>(result.samples.size());
    result.samples.push_back(std::move(kept));
  }
  for (TimedSample& t : timeline) {
    t.sample = sample_index[t.sample];
  }
  // A timed sample of weight 0 may belong to a Sample that was dropped.
  std::erase_if(timeline, [](const TimedSample& t) { return t.sample == UINT32_MAX; });
  result.timeline = std::move(timeline);
  *out = std::move(result);
  return Status::Ok();
}

Profile KeepEvents(const Profile& in, const std::vector<size_t>& events) {
  Profile out;
  out.meta = in.meta;
  out.frames = in.frames;
  out.health = in.health;
  out.modules = in.modules;
  out.label_sets = in.label_sets;
  out.threads = in.threads;
  std::vector<int64_t> new_event(in.events.size(), -1);
  for (size_t e : events) {
    if (e >= in.events.size()) continue;
    new_event[e] = static_cast<int64_t>(out.events.size());
    out.events.push_back(in.events[e]);
  }
  std::vector<int64_t> new_sample(in.samples.size(), -1);
  for (size_t i = 0; i < in.samples.size(); ++i) {
    const Sample& s = in.samples[i];
    Sample kept = s;
    kept.weights.assign(out.events.size(), 0);
    bool any = false;
    for (size_t e = 0; e < s.weights.size() && e < new_event.size(); ++e) {
      if (new_event[e] < 0) continue;
      kept.weights[static_cast<size_t>(new_event[e])] = s.weights[e];
      any = any || s.weights[e] != 0;
    }
    if (!any) continue;
    new_sample[i] = static_cast<int64_t>(out.samples.size());
    out.samples.push_back(std::move(kept));
  }
  for (const TimedSample& t : in.timeline) {
    if (t.sample >= new_sample.size() || t.event >= new_event.size()) continue;
    if (new_sample[t.sample] < 0 || new_event[t.event] < 0) continue;
    TimedSample kept = t;
    kept.sample = static_cast<uint32_t>(new_sample[t.sample]);
    kept.event = static_cast<uint32_t>(new_event[t.event]);
    out.timeline.push_back(kept);
  }
  return out;
}

}  // namespace inprof
