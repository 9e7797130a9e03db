// `perf script` output read into a Profile (docs/formats.md, "`perf script` and
// `perf report` input").
//
// One sample is a header line that starts in column 0:
//   comm pid/tid [cpu] time: [period] event: [ip sym+off (dso)]
// (every field but time and event can be missing, comm may contain spaces), then one line per
// frame, leaf first, each starting with a tab:
//   \t  addr sym+off (dso)        or, for an inline frame (`--inline`),  \t  addr sym (inlined)
// With `-F +srcline` each frame is followed by "  file:line" (two spaces), which carries the
// " (inlined)" mark instead of the frame line. Samples end at a blank line.
//
// Frames are reversed to root first. Identical stacks of one event and thread are merged into
// one sample as they are read: a long recording repeats a few thousand stacks millions of
// times, and merging keeps every pass over the stacks proportional to the distinct stacks.
// What is kept per perf sample is its place on the timeline (Profile::timeline: time since
// the first sample, the merged sample, the event, the weight): 24 bytes for a header line
// that is itself longer than that, so memory stays below the size of the text.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "inprof/perf_script.h"
#include "stacks.h"

namespace inprof {
namespace {

// Every sample keeps one weight per event, so distinct events multiply the memory of every
// stack: a file whose samples each name a new event would need samples^2 weights. perf
// records a few events at a time; this many is far beyond any real recording.
constexpr uint32_t kMaxEvents = 256;

bool IsHex(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

bool IsDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// "12345.678901:" - the time field, always followed by ':'.
bool IsTimeToken(std::string_view s) {
  if (s.size() < 4 || s.back() != ':') return false;
  s.remove_suffix(1);
  const size_t dot = s.find('.');
  return dot != std::string_view::npos && dot > 0 && IsDigits(s.substr(0, dot)) &&
         IsDigits(s.substr(dot + 1));
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// Next whitespace-separated token of `s` (advanced past it).
std::string_view NextToken(std::string_view& s) {
  s = Trim(s);
  const size_t end = s.find_first_of(" \t");
  const std::string_view token = s.substr(0, end);
  s.remove_prefix(end == std::string_view::npos ? s.size() : end);
  return token;
}

std::string_view BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

struct RawFrame {
  std::string_view symbol;  // without "+0xoff"
  std::string_view dso;     // without the parentheses; empty when not printed
  std::string_view srcline;
  bool inlined = false;
};

// "sym+0x1c (dso)", "sym (inlined)", "[unknown] ([unknown])", "sym" (no dso field).
void ParseFrameText(std::string_view text, RawFrame* frame) {
  text = Trim(text);
  if (text.ends_with(" (inlined)")) {
    frame->inlined = true;
    text = Trim(text.substr(0, text.size() - 10));
  }
  if (text.ends_with(')')) {
    const size_t open = text.rfind(" (");
    if (open != std::string_view::npos) {
      frame->dso = text.substr(open + 2, text.size() - open - 3);
      text = Trim(text.substr(0, open));
    }
  }
  // perf (since Linux 4.8) appends the offset into the symbol; it is noise for aggregation.
  const size_t plus = text.rfind("+0x");
  if (plus != std::string_view::npos && plus > 0 && IsHex(text.substr(plus + 3))) {
    text = text.substr(0, plus);
  }
  frame->symbol = text;
}

// "w.c:3", "libc-start.c:360 (inlined)", "??:0", "libc.so.6[27b25]", "[kernel.kallsyms][ff..]".
void ParseSrcline(std::string_view text, RawFrame* frame) {
  text = Trim(text);
  if (text.ends_with(" (inlined)")) {
    frame->inlined = true;
    text = Trim(text.substr(0, text.size() - 10));
  }
  frame->srcline = text;
}

Frame MakeFrame(const RawFrame& raw) {
  Frame frame;
  frame.kind = raw.inlined ? FrameKind::kInlined : FrameKind::kNative;
  if (raw.dso != "[unknown]") frame.module = std::string(raw.dso);
  if (raw.symbol.empty() || raw.symbol == "[unknown]") {
    // As stackcollapse-perf.pl does: the module's name stands for its unknown code, so
    // unknown frames of one library merge instead of scattering over addresses.
    if (frame.module.empty()) {
      frame.function = "[unknown]";
      frame.kind = FrameKind::kSynthetic;
    } else {
      frame.function = "[" + std::string(BaseName(raw.dso)) + "]";
    }
  } else {
    frame.function = std::string(raw.symbol);
  }
  const size_t colon = raw.srcline.rfind(':');
  if (colon != std::string_view::npos && colon > 0 && raw.srcline.substr(0, colon) != "??") {
    uint32_t line = 0;
    const std::string_view digits = raw.srcline.substr(colon + 1);
    const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), line);
    if (r.ec == std::errc() && r.ptr == digits.data() + digits.size() && line > 0) {
      frame.file = std::string(raw.srcline.substr(0, colon));
      frame.line = line;
    }
  }
  return frame;
}

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};

// Samples are merged by (event, thread, frames); lookups use a view of the stack being built,
// so a repeated stack (most of them) costs a hash and a compare, no copy.
struct StackKey {
  uint32_t event = 0;
  int64_t tid = 0;
  std::vector<uint32_t> frames;
};
struct StackView {
  uint32_t event = 0;
  int64_t tid = 0;
  const std::vector<uint32_t>* frames = nullptr;
};

struct StackHash {
  using is_transparent = void;
  static size_t Hash(uint32_t event, int64_t tid, const std::vector<uint32_t>& frames) {
    uint64_t h = (0x9e3779b97f4a7c15ull ^ event) * 0x100000001b3ull ^ static_cast<uint64_t>(tid);
    for (uint32_t f : frames) h = (h ^ f) * 0x100000001b3ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
  size_t operator()(const StackKey& k) const { return Hash(k.event, k.tid, k.frames); }
  size_t operator()(const StackView& k) const { return Hash(k.event, k.tid, *k.frames); }
};

struct StackEqual {
  using is_transparent = void;
  bool operator()(const StackKey& a, const StackKey& b) const {
    return a.event == b.event && a.tid == b.tid && a.frames == b.frames;
  }
  bool operator()(const StackView& a, const StackKey& b) const {
    return a.event == b.event && a.tid == b.tid && *a.frames == b.frames;
  }
  bool operator()(const StackKey& a, const StackView& b) const { return (*this)(b, a); }
};

class PerfScriptParser {
 public:
  explicit PerfScriptParser(const std::string& name) : name_(name) {}

  bool Line(std::string_view line, size_t number) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (Trim(line).empty()) {
      return EndSample();
    }
    if (line.front() == '#' && !in_sample_) return true;
    if (line.front() == '\t') return FrameLine(line, number);
    if (line.front() == ' ') {
      if (!in_sample_ || raw_.empty())
        return Fail(number, "expected a sample header before this line");
      ParseSrcline(line, &raw_.back());
      return true;
    }
    EndSample();
    return Header(line, number);
  }

  bool Finish(Profile* out) {
    EndSample();
    if (profile_.samples.empty() && header_seen_ == 0) {
      error_ = name_ + ":1: expected perf script output (no sample header found)";
      return false;
    }
    profile_.health.samples = header_seen_;
    if (last_time_ns_ > first_time_ns_) profile_.meta.duration_ns = last_time_ns_ - first_time_ns_;
    for (Sample& sample : profile_.samples) sample.weights.resize(profile_.events.size(), 0);
    // perf script prints samples in time order, except that each CPU's buffer is flushed on
    // its own, so samples of different CPUs can come a little out of order.
    for (TimedSample& t : profile_.timeline) t.time_ns -= first_time_ns_;
    auto earlier = [](const TimedSample& a, const TimedSample& b) { return a.time_ns < b.time_ns; };
    if (!std::is_sorted(profile_.timeline.begin(), profile_.timeline.end(), earlier)) {
      std::stable_sort(profile_.timeline.begin(), profile_.timeline.end(), earlier);
    }
    for (auto& [tid, comm] : thread_names_) profile_.threads.push_back({tid, std::move(comm)});
    std::sort(profile_.threads.begin(), profile_.threads.end(),
              [](const ThreadInfo& a, const ThreadInfo& b) { return a.tid < b.tid; });
    *out = std::move(profile_);
    return true;
  }

  const std::string& error() const { return error_; }

 private:
  bool Fail(size_t number, const std::string& what) {
    error_ = name_ + ":" + std::to_string(number) + ": " + what;
    return false;
  }

  bool Header(std::string_view line, size_t number) {
    // Find the time token; what follows is "[period] event: [ip sym (dso)]".
    std::string_view rest = line;
    std::string_view before_time;
    bool found_time = false;
    while (!rest.empty()) {
      const std::string_view start = rest;
      const std::string_view token = NextToken(rest);
      if (token.empty()) break;
      if (IsTimeToken(token)) {
        found_time = true;
        before_time = line.substr(0, static_cast<size_t>(start.data() - line.data()));
        ParseTime(token);
        break;
      }
    }
    if (!found_time) {
      return Fail(number,
                  "expected a sample header 'COMM PID/TID [CPU] TIME: [PERIOD] EVENT:' "
                  "(perf script output)");
    }
    int64_t period = 1;
    bool has_period = false;
    std::string_view after = rest;
    std::string_view token = NextToken(after);
    if (IsDigits(token)) {
      const auto r = std::from_chars(token.data(), token.data() + token.size(), period);
      if (r.ec != std::errc()) return Fail(number, "expected a period that fits in 64 bits");
      has_period = true;
      rest = after;
      token = NextToken(after);
    }
    std::string_view event = "samples";
    if (!token.empty() && token.back() == ':') {
      event = token.substr(0, token.size() - 1);
      rest = after;
    }
    event_ = EventIndex(event, has_period);
    if (event_ >= kMaxEvents) {
      return Fail(number, "expected at most " + std::to_string(kMaxEvents) +
                              " distinct events (this sample names one more)");
    }
    weight_ = period;
    in_sample_ = true;
    ++header_seen_;
    if (profile_.meta.program.empty()) SetMeta(before_time);
    SetThread(before_time);
    // Without a call chain perf prints the sample's own ip/sym/dso on the header line.
    rest = Trim(rest);
    std::string_view probe = rest;
    const std::string_view ip = NextToken(probe);
    if (IsHex(ip) && !Trim(probe).empty()) {
      RawFrame frame;
      ParseFrameText(probe, &frame);
      raw_.push_back(frame);
      header_frame_ = true;
    }
    return true;
  }

  bool FrameLine(std::string_view line, size_t number) {
    if (!in_sample_) return Fail(number, "expected a sample header before this frame");
    if (header_frame_) {
      // A call chain follows after all: the ip on the header line is its leaf again.
      raw_.clear();
      header_frame_ = false;
    }
    std::string_view rest = line;
    const std::string_view ip = NextToken(rest);
    if (!IsHex(ip)) {
      return Fail(number, "expected a frame '\\tADDRESS SYMBOL+OFFSET (DSO)' with a hex address");
    }
    RawFrame frame;
    ParseFrameText(rest, &frame);
    raw_.push_back(frame);
    return true;
  }

  bool EndSample() {
    if (!in_sample_) return true;
    in_sample_ = false;
    header_frame_ = false;
    stack_.clear();
    // perf prints the leaf first; the model is root first.
    for (auto it = raw_.rbegin(); it != raw_.rend(); ++it) stack_.push_back(Intern(*it));
    raw_.clear();
    size_t index = 0;
    if (auto it = stacks_.find(StackView{event_, tid_, &stack_}); it != stacks_.end()) {
      index = it->second;
    } else {
      index = profile_.samples.size();
      stacks_.emplace(StackKey{event_, tid_, stack_}, index);
      Sample sample;
      sample.frames = stack_;
      sample.tid = tid_;
      profile_.samples.push_back(std::move(sample));
    }
    std::vector<int64_t>& weights = profile_.samples[index].weights;
    if (weights.size() <= event_) weights.resize(event_ + 1, 0);
    Add(weights[event_], weight_);
    Add(profile_.events[event_].total_weight, weight_);
    profile_.timeline.push_back({time_ns_, static_cast<uint32_t>(index), event_, weight_});
    return true;
  }

  static void Add(int64_t& total, int64_t value) {
    if (__builtin_add_overflow(total, value, &total)) total = std::numeric_limits<int64_t>::max();
  }

  uint32_t Intern(const RawFrame& raw) {
    key_.assign(raw.symbol);
    key_ += '\0';
    key_ += raw.dso;
    key_ += '\0';
    key_ += raw.srcline;
    key_ += raw.inlined ? '\1' : '\0';
    auto it = frames_.find(std::string_view(key_));
    if (it != frames_.end()) return it->second;
    const uint32_t index = static_cast<uint32_t>(profile_.frames.size());
    profile_.frames.push_back(MakeFrame(raw));
    frames_.emplace(key_, index);
    return index;
  }

  uint32_t EventIndex(std::string_view name, bool has_period) {
    for (uint32_t i = 0; i < profile_.events.size(); ++i) {
      if (profile_.events[i].name == name) return i;
    }
    if (profile_.events.size() >= kMaxEvents) return kMaxEvents;
    EventInfo info;
    info.name = std::string(name);
    // perf's software clocks count nanoseconds; other events count occurrences. Without a
    // period field every sample weighs 1.
    const bool clock = name == "cpu-clock" || name == "task-clock" ||
                       name.starts_with("cpu-clock:") || name.starts_with("task-clock:");
    info.unit = !has_period ? "samples" : clock ? "nanoseconds" : "count";
    info.period = 1;
    profile_.events.push_back(std::move(info));
    return static_cast<uint32_t>(profile_.events.size() - 1);
  }

  void ParseTime(std::string_view token) {
    token.remove_suffix(1);
    const size_t dot = token.find('.');
    int64_t seconds = 0, fraction = 0;
    // A time past what nanoseconds in 64 bits hold (292 years since boot) is no real time;
    // it is kept at that limit so that the timeline stays in order. Digits past 2^63 (which
    // from_chars leaves unparsed) are such a time too, not time 0.
    constexpr int64_t kMaxSeconds = std::numeric_limits<int64_t>::max() / 1000000000 - 1;
    if (std::from_chars(token.data(), token.data() + dot, seconds).ec != std::errc()) {
      seconds = kMaxSeconds;
    }
    std::string_view frac = token.substr(dot + 1, 9);
    std::from_chars(frac.data(), frac.data() + frac.size(), fraction);
    for (size_t i = frac.size(); i < 9; ++i) fraction *= 10;
    if (seconds > kMaxSeconds) seconds = kMaxSeconds;
    const int64_t ns = seconds * 1000000000 + fraction;
    if (!time_seen_ || ns < first_time_ns_) first_time_ns_ = ns;
    time_seen_ = true;
    last_time_ns_ = std::max(last_time_ns_, ns);
    time_ns_ = ns;
  }

  // "comm pid/tid [cpu]", "comm tid [cpu]" or "comm tid" before the time: the sample's thread,
  // and its name as last seen (a thread renames itself with prctl(PR_SET_NAME)). Without a
  // number there is no thread (tid 0).
  void SetThread(std::string_view fields) {
    fields = Trim(fields);
    if (!fields.empty() && fields.back() == ']') {
      const size_t open = fields.rfind('[');
      if (open != std::string_view::npos) fields = Trim(fields.substr(0, open));
    }
    const size_t space = fields.rfind(' ');
    std::string_view ids = space == std::string_view::npos ? fields : fields.substr(space + 1);
    const std::string_view comm =
        space == std::string_view::npos ? std::string_view() : Trim(fields.substr(0, space));
    if (const size_t slash = ids.find('/'); slash != std::string_view::npos) {
      ids.remove_prefix(slash + 1);
    }
    tid_ = 0;
    if (!IsDigits(ids) ||
        std::from_chars(ids.data(), ids.data() + ids.size(), tid_).ec != std::errc()) {
      tid_ = 0;
      return;
    }
    // Consecutive samples are mostly of one thread: its name is at hand without a lookup.
    if (tid_ != named_tid_ || named_ == nullptr) {
      named_ = &thread_names_[tid_];
      named_tid_ = tid_;
    }
    if (*named_ != comm) named_->assign(comm);
  }

  // "comm pid/tid [cpu]" before the time: remember the first sample's command and pid.
  void SetMeta(std::string_view fields) {
    fields = Trim(fields);
    if (!fields.empty() && fields.back() == ']') {
      const size_t open = fields.rfind(" [");
      if (open != std::string_view::npos) fields = Trim(fields.substr(0, open));
    }
    const size_t space = fields.rfind(' ');
    if (space == std::string_view::npos) {
      profile_.meta.program = std::string(fields);
      return;
    }
    std::string_view ids = fields.substr(space + 1);
    ids = ids.substr(0, ids.find('/'));
    if (IsDigits(ids)) {
      std::from_chars(ids.data(), ids.data() + ids.size(), profile_.meta.pid);
      fields = Trim(fields.substr(0, space));
    }
    profile_.meta.program = std::string(fields);
  }

  const std::string& name_;
  std::string error_;
  Profile profile_;
  bool in_sample_ = false;
  bool header_frame_ = false;
  uint32_t event_ = 0;
  int64_t weight_ = 1;
  uint64_t header_seen_ = 0;
  int64_t first_time_ns_ = 0, last_time_ns_ = 0;
  bool time_seen_ = false;
  int64_t time_ns_ = 0;  // of the sample being read
  int64_t tid_ = 0;      // of the sample being read; 0 when perf printed none
  std::unordered_map<int64_t, std::string> thread_names_;  // (its nodes do not move)
  int64_t named_tid_ = 0;
  std::string* named_ = nullptr;  // thread_names_[named_tid_]
  std::vector<RawFrame> raw_;
  std::vector<uint32_t> stack_;
  std::string key_;
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> frames_;
  std::unordered_map<StackKey, size_t, StackHash, StackEqual> stacks_;
};

}  // namespace

Status ReadPerfScript(std::string_view text, const std::string& name, Profile* out) {
  PerfScriptParser parser(name);
  const bool ok = internal::ForEachLine(
      text, [&](std::string_view line, size_t number) { return parser.Line(line, number); });
  if (!ok) return Status::Error(parser.error());
  if (!parser.Finish(out)) return Status::Error(parser.error());
  return Status::Ok();
}

bool LooksLikePerfScript(std::string_view text) {
  // The first line that is not a comment must be a sample header: it has a "TIME:" field.
  // (`perf script --header` puts a long comment block first.)
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (Trim(line).empty() || line.front() == '#') continue;
    if (line.front() == ' ' || line.front() == '\t') return false;
    while (!line.empty()) {
      if (IsTimeToken(NextToken(line))) return true;
    }
    return false;
  }
  return false;
}

}  // namespace inprof
