// The speedscope reader: files inprof wrote (speedscope.cpp), read back exactly through the
// "inprof" members speedscope ignores, and files from other tools ("sampled" and "evented"
// profiles as speedscope's src/lib/file-format-spec.ts defines them).
//
// JSON members may come in any order ("profiles" before "shared", the top-level "inprof"
// last), so one pass with the pull cursor stores what each profile says and a second step
// turns it into samples once everything is known. Both are linear in the input: stacks are
// stored flat, identical (stack, thread, labels) samples are merged through one hash table,
// and the stacks of evented profiles, which the model needs whole per sample, are built from
// a tree of open frames with a budget proportional to the input (nesting 100,000 frames
// deep and then toggling the innermost one would otherwise ask for 10^10 frame entries).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "inprof/speedscope.h"
#include "inprof/json.h"

namespace inprof {
namespace {

using internal::JsonCursor;

constexpr std::string_view kSchema = "https://www.speedscope.app/file-format-schema.json";
constexpr int64_t kVersion = 1;
// Far beyond real profiles (a large C++ program has a few hundred thousand frames, a process
// a few thousand threads), low enough that a hostile file cannot make the tables the size of
// memory before its data runs out.
constexpr size_t kMaxFrames = size_t{1} << 24;
constexpr size_t kMaxProfiles = size_t{1} << 20;
constexpr size_t kMaxLabelSets = size_t{1} << 24;
// The frames spelled out for evented profiles' distinct stacks, per byte of input (plus 4M):
// an open event takes about 30 bytes, so real files stay far below it.
constexpr uint64_t kEventedBudgetPerByte = 4;

// A JSON number as written: speedscope's weights and times are JavaScript numbers (doubles,
// often fractional seconds), inprof's are integers that must come back exactly even past 2^53.
struct Number {
  double d = 0;
  int64_t i = 0;
  bool exact = false;  // `i` is the value
};

enum class UnitKind { kNone, kTime, kBytes };

struct Unit {
  UnitKind kind = UnitKind::kNone;
  int64_t ns = 1;  // nanoseconds per unit, for kTime
};

bool ParseUnit(std::string_view name, Unit* unit) {
  static constexpr std::pair<std::string_view, Unit> kUnits[] = {
      {"none", {UnitKind::kNone, 1}},
      {"nanoseconds", {UnitKind::kTime, 1}},
      {"microseconds", {UnitKind::kTime, 1000}},
      {"milliseconds", {UnitKind::kTime, 1000000}},
      {"seconds", {UnitKind::kTime, 1000000000}},
      {"bytes", {UnitKind::kBytes, 1}},
  };
  for (const auto& [n, u] : kUnits) {
    if (n == name) {
      *unit = u;
      return true;
    }
  }
  return false;
}

// `n` times `factor`, rounded to an integer; false when that does not fit in 63 bits.
bool Scaled(const Number& n, int64_t factor, int64_t* out) {
  if (n.exact) return !__builtin_mul_overflow(n.i, factor, out);
  const double v = n.d * static_cast<double>(factor);
  if (!(v > -9.2e18 && v < 9.2e18)) return false;
  *out = std::llround(v);
  return true;
}

struct OpenClose {
  bool open = false;
  uint32_t frame = 0;
  Number at;
  size_t pos = 0;  // where the event is, for errors
};

// What one element of "profiles" says, before it is interpreted.
struct RawProfile {
  size_t pos = 0;
  std::string type;
  std::string name;
  Unit unit;
  bool has_unit = false;
  Number start;
  Number end;
  bool has_end = false;
  // sampled: stack i is flat_frames[stack_end[i-1] .. stack_end[i]), root first
  bool has_samples = false;
  size_t samples_pos = 0;
  std::vector<uint32_t> flat_frames;
  std::vector<size_t> stack_end;
  bool has_weights = false;
  size_t weights_pos = 0;
  std::vector<Number> weights;
  // evented
  bool has_events = false;
  std::vector<OpenClose> events;
  // inprof's member
  bool has_tid = false;
  int64_t tid = 0;
  bool has_thread = false;
  std::string thread;
  bool has_times = false;
  size_t times_pos = 0;
  std::vector<int64_t> times;
  bool has_labels = false;
  size_t labels_pos = 0;
  std::vector<uint32_t> labels;
};

// The top-level "inprof" member.
struct Header {
  bool present = false;
  Metadata meta;
  bool has_event = false;
  EventInfo event;
  int64_t scale = 1;
  bool timeline = false;
  std::vector<std::vector<Label>> label_sets;
};

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text), c_(text) {}

  bool Read(Profile* out);
  const JsonCursor& cursor() const { return c_; }

 private:
  // Where the next token starts (the cursor's position is before the whitespace): errors
  // point at the line of the value, not the line before it.
  size_t Here() const {
    size_t p = c_.position();
    while (p < text_.size() &&
           (text_[p] == ' ' || text_[p] == '\n' || text_[p] == '\r' || text_[p] == '\t')) {
      ++p;
    }
    return p;
  }
  bool ReadNumber(Number* n);
  bool ReadCount(uint32_t* value, const char* what);
  bool ReadFrames();
  bool ReadFrame(Frame* frame);
  bool ReadProfile(RawProfile* p);
  bool ReadStack(RawProfile* p);
  bool ReadEvent(RawProfile* p);
  bool ReadProfileExtras(RawProfile* p);
  bool ReadHeader();
  bool ReadLabelSet(std::vector<Label>* set);

  bool Assemble(Profile* out);
  bool CheckProfile(const RawProfile& p, size_t index);
  bool AddSampled(const RawProfile& p, int64_t tid);
  bool AddEvented(const RawProfile& p, int64_t tid);
  // Adds `weight` to the sample `key` stands for (made by `make` when new), and a timed
  // sample at `time_ns` when the profile has a timeline.
  // The sample with this stack, thread and labels (made on first use): identical ones merge.
  bool Intern(int64_t tid, uint32_t labels, const uint32_t* frames, size_t depth, size_t pos,
              uint32_t* index);
  // Adds `weight` to the sample, and with `timed` a timed sample at `time_ns`.
  void AddWeight(uint32_t sample, int64_t weight, int64_t time_ns, bool timed);
  bool Fail(size_t pos, std::string what) { return c_.FailAt(pos, std::move(what)); }

  std::string_view text_;
  JsonCursor c_;
  bool has_schema_ = false;
  bool has_shared_ = false;
  bool has_profiles_ = false;
  bool frames_known_ = false;  // "shared" came before the profile being read
  std::string name_;
  std::vector<Frame> frames_;
  std::vector<RawProfile> profiles_;
  Header header_;

  // Assembly.
  Profile profile_;
  bool timeline_ = false;
  Unit unit_;
  int64_t base_ns_ = 0;  // plain files: the earliest start, time 0 of the timeline
  int64_t end_ns_ = 0;
  std::vector<uint32_t> label_index_;  // a label set of the file -> Profile::label_sets + 1
  std::unordered_map<std::string, uint32_t> samples_;  // Intern's key -> Profile::samples
  std::string key_;
  uint64_t evented_budget_ = 0;
};

bool Reader::ReadNumber(Number* n) {
  const size_t p = Here();
  // An integer that fits in 63 bits is read as one, so large inprof values stay exact.
  size_t q = p + (p < text_.size() && text_[p] == '-');
  int64_t magnitude = 0;
  bool fits = q < text_.size();
  const size_t digits_at = q;
  while (q < text_.size() && text_[q] >= '0' && text_[q] <= '9') {
    fits = fits && !__builtin_mul_overflow(magnitude, 10, &magnitude) &&
           !__builtin_add_overflow(magnitude, text_[q] - '0', &magnitude);
    ++q;
  }
  const bool integral = q > digits_at && (q == text_.size() ||
                                          (text_[q] != '.' && text_[q] != 'e' && text_[q] != 'E'));
  if (integral && fits) {
    if (!c_.ReadInt(&n->i)) return false;
    n->d = static_cast<double>(n->i);
    n->exact = true;
    return true;
  }
  if (!c_.ReadDouble(&n->d)) return false;
  n->exact = std::trunc(n->d) == n->d && std::fabs(n->d) < 9.0e15;
  n->i = n->exact ? static_cast<int64_t>(n->d) : 0;
  return true;
}

// A line, column or index: an integer from 0 to 2^32-1 (3.0 is 3, as JavaScript wrote it).
bool Reader::ReadCount(uint32_t* value, const char* what) {
  const size_t at = Here();
  Number n;
  if (!ReadNumber(&n)) return false;
  if (!n.exact || n.i < 0 || n.i > 0xffffffffLL) {
    return Fail(at, std::string("expected ") + what + " (an integer from 0 to 4294967295)");
  }
  *value = static_cast<uint32_t>(n.i);
  return true;
}

bool Reader::ReadFrame(Frame* frame) {
  const size_t at = Here();
  bool named = false;
  const bool ok = ReadObject(c_, [&](std::string_view key) {
    if (key == "name") {
      named = true;
      return c_.ReadString(&frame->function);
    }
    if (key == "file") return c_.ReadString(&frame->file);
    if (key == "line") return ReadCount(&frame->line, "a line number");
    if (key == "col") return ReadCount(&frame->column, "a column number");
    if (key == "inprof") {
      return ReadObject(c_, [&](std::string_view k) {
        const size_t value_at = Here();
        if (k == "kind") {
          std::string kind;
          if (!c_.ReadString(&kind)) return false;
          if (kind == "native") {
            frame->kind = FrameKind::kNative;
          } else if (kind == "inlined") {
            frame->kind = FrameKind::kInlined;
          } else if (kind == "synthetic") {
            frame->kind = FrameKind::kSynthetic;
          } else {
            return Fail(value_at, "expected \"kind\": \"native\", \"inlined\" or \"synthetic\"");
          }
          return true;
        }
        if (k == "module") return c_.ReadString(&frame->module);
        if (k == "address") {
          std::string hex;
          if (!c_.ReadString(&hex)) return false;
          const auto r = std::from_chars(hex.data() + std::min<size_t>(2, hex.size()),
                                         hex.data() + hex.size(), frame->address, 16);
          if (!hex.starts_with("0x") || hex.size() == 2 || r.ec != std::errc() ||
              r.ptr != hex.data() + hex.size()) {
            return Fail(value_at, "expected \"address\": \"0x...\" (hexadecimal, at most 64 bits)");
          }
          return true;
        }
        return c_.Skip();
      });
    }
    return c_.Skip();
  });
  if (ok && !named) return Fail(at, "expected a frame with a \"name\"");
  return ok;
}

bool Reader::ReadFrames() {
  return ReadArray(c_, [&] {
    if (frames_.size() >= kMaxFrames) {
      return c_.Fail("expected at most " + std::to_string(kMaxFrames) + " frames in \"shared\"");
    }
    return ReadFrame(&frames_.emplace_back());
  });
}

bool Reader::ReadStack(RawProfile* p) {
  const bool ok = ReadArray(c_, [&] {
    const size_t at = Here();
    uint32_t frame = 0;
    if (!ReadCount(&frame, "a frame index")) return false;
    // Checked here when the frames are known (the usual order), else once they are.
    if (frames_known_ && frame >= frames_.size()) {
      return Fail(at, "expected a frame index below " + std::to_string(frames_.size()) +
                          " (the number of frames in \"shared\")");
    }
    p->flat_frames.push_back(frame);
    return true;
  });
  p->stack_end.push_back(p->flat_frames.size());
  return ok;
}

bool Reader::ReadEvent(RawProfile* p) {
  OpenClose& e = p->events.emplace_back();
  e.pos = Here();
  bool has_type = false, has_frame = false, has_at = false;
  const bool ok = ReadObject(c_, [&](std::string_view key) {
    if (key == "type") {
      const size_t at = Here();
      std::string type;
      if (!c_.ReadString(&type)) return false;
      if (type != "O" && type != "C") {
        return Fail(at, "expected an event \"type\": \"O\" (open a frame) or \"C\" (close it)");
      }
      e.open = type == "O";
      has_type = true;
      return true;
    }
    if (key == "frame") {
      const size_t at = Here();
      if (!ReadCount(&e.frame, "a frame index")) return false;
      if (frames_known_ && e.frame >= frames_.size()) {
        return Fail(at, "expected a frame index below " + std::to_string(frames_.size()) +
                            " (the number of frames in \"shared\")");
      }
      has_frame = true;
      return true;
    }
    if (key == "at") {
      has_at = true;
      return ReadNumber(&e.at);
    }
    return c_.Skip();
  });
  if (ok && !(has_type && has_frame && has_at)) {
    return Fail(e.pos, "expected an event with \"type\", \"frame\" and \"at\"");
  }
  return ok;
}

bool Reader::ReadProfileExtras(RawProfile* p) {
  return ReadObject(c_, [&](std::string_view key) {
    if (key == "tid") {
      p->has_tid = true;
      return c_.ReadInt(&p->tid);
    }
    if (key == "thread") {
      p->has_thread = true;
      return c_.ReadString(&p->thread);
    }
    if (key == "times_ns") {
      p->has_times = true;
      p->times_pos = Here();
      p->times.clear();
      return ReadArray(c_, [&] { return c_.ReadInt(&p->times.emplace_back()); });
    }
    if (key == "labels") {
      p->has_labels = true;
      p->labels_pos = Here();
      p->labels.clear();
      return ReadArray(c_,
                       [&] { return ReadCount(&p->labels.emplace_back(), "a label set index"); });
    }
    return c_.Skip();
  });
}

bool Reader::ReadProfile(RawProfile* p) {
  p->pos = Here();
  return ReadObject(c_, [&](std::string_view key) {
    const size_t at = Here();
    if (key == "type") return c_.ReadString(&p->type);
    if (key == "name") return c_.ReadString(&p->name);
    if (key == "unit") {
      std::string unit;
      if (!c_.ReadString(&unit)) return false;
      if (!ParseUnit(unit, &p->unit)) {
        return Fail(at,
                    "expected \"unit\": \"none\", \"nanoseconds\", \"microseconds\", "
                    "\"milliseconds\", \"seconds\" or \"bytes\"");
      }
      p->has_unit = true;
      return true;
    }
    if (key == "startValue") return ReadNumber(&p->start);
    if (key == "endValue") {
      p->has_end = true;
      return ReadNumber(&p->end);
    }
    if (key == "samples") {
      p->has_samples = true;
      p->samples_pos = at;
      p->flat_frames.clear();
      p->stack_end.clear();
      return ReadArray(c_, [&] { return ReadStack(p); });
    }
    if (key == "weights") {
      p->has_weights = true;
      p->weights_pos = at;
      p->weights.clear();
      return ReadArray(c_, [&] {
        const size_t w_at = Here();
        Number& n = p->weights.emplace_back();
        if (!ReadNumber(&n)) return false;
        // speedscope throws on a negative weight while importing.
        if (n.d < 0) return Fail(w_at, "expected a weight of at least 0");
        return true;
      });
    }
    if (key == "events") {
      p->has_events = true;
      p->events.clear();
      return ReadArray(c_, [&] { return ReadEvent(p); });
    }
    if (key == "inprof") return ReadProfileExtras(p);
    return c_.Skip();
  });
}

bool Reader::ReadLabelSet(std::vector<Label>* set) {
  const size_t at = Here();
  if (!ReadArray(c_, [&] {
        Label& label = set->emplace_back();
        int n = 0;
        return ReadArray(c_,
                         [&] {
                           if (n > 1)
                             return c_.Fail("expected a label as [key, value] (two strings)");
                           return c_.ReadString(n++ == 0 ? &label.key : &label.value);
                         }) &&
               (n == 2 || c_.Fail("expected a label as [key, value] (two strings)"));
      })) {
    return false;
  }
  // Profile::label_sets holds each set sorted by key, keys unique.
  std::sort(set->begin(), set->end());
  for (size_t i = 1; i < set->size(); ++i) {
    if ((*set)[i].key == (*set)[i - 1].key) {
      return Fail(at, "expected each key once in a label set");
    }
  }
  return true;
}

bool Reader::ReadHeader() {
  header_.present = true;
  return ReadObject(c_, [&](std::string_view key) {
    const size_t at = Here();
    if (key == "version") {
      int64_t version = 0;
      if (!c_.ReadInt(&version)) return false;
      if (version < 1 || version > kVersion) {
        return Fail(at, "expected \"version\": 1 in \"inprof\" (this reader reads version 1)");
      }
      return true;
    }
    if (key == "program") return c_.ReadString(&header_.meta.program);
    if (key == "pid") return c_.ReadInt(&header_.meta.pid);
    if (key == "start_time_ns") return c_.ReadInt(&header_.meta.start_time_ns);
    if (key == "duration_ns") return c_.ReadInt(&header_.meta.duration_ns);
    if (key == "event") {
      header_.has_event = true;
      EventInfo& e = header_.event;
      return ReadObject(c_, [&](std::string_view k) {
        if (k == "name") return c_.ReadString(&e.name);
        if (k == "unit") return c_.ReadString(&e.unit);
        if (k == "period") {
          const size_t p_at = Here();
          int64_t period = 0;
          if (!c_.ReadInt(&period)) return false;
          if (period < 0) return Fail(p_at, "expected a period of at least 0");
          e.period = static_cast<uint64_t>(period);
          return true;
        }
        if (k == "frequency_hz") return c_.ReadDouble(&e.frequency_hz);
        return c_.Skip();  // total_weight is recomputed from the samples
      });
    }
    if (key == "weight_scale") {
      if (!c_.ReadInt(&header_.scale)) return false;
      if (header_.scale < 1) return Fail(at, "expected a \"weight_scale\" of at least 1");
      return true;
    }
    if (key == "timeline") return c_.ReadBool(&header_.timeline);
    if (key == "label_sets") {
      header_.label_sets.clear();
      return ReadArray(c_, [&] {
        if (header_.label_sets.size() >= kMaxLabelSets) {
          return c_.Fail("expected at most " + std::to_string(kMaxLabelSets) + " label sets");
        }
        return ReadLabelSet(&header_.label_sets.emplace_back());
      });
    }
    return c_.Skip();
  });
}

bool Reader::Read(Profile* out) {
  const bool ok = ReadObject(c_, [&](std::string_view key) {
    const size_t at = Here();
    if (key == "$schema") {
      std::string schema;
      if (!c_.ReadString(&schema)) return false;
      if (schema != kSchema) {
        return Fail(at, "expected \"$schema\": \"" + std::string(kSchema) + "\"");
      }
      has_schema_ = true;
      return true;
    }
    if (key == "shared") {
      has_shared_ = true;
      const bool shared = ReadObject(c_, [&](std::string_view k) {
        if (k == "frames") return ReadFrames();
        return c_.Skip();
      });
      frames_known_ = true;
      return shared;
    }
    if (key == "profiles") {
      has_profiles_ = true;
      return ReadArray(c_, [&] {
        if (profiles_.size() >= kMaxProfiles) {
          return c_.Fail("expected at most " + std::to_string(kMaxProfiles) + " profiles");
        }
        return ReadProfile(&profiles_.emplace_back());
      });
    }
    if (key == "name") return c_.ReadString(&name_);
    if (key == "inprof") return ReadHeader();
    return c_.Skip();  // exporter, activeProfileIndex, and what newer versions add
  });
  if (!ok) return false;
  if (!c_.AtEnd()) return c_.Fail("expected nothing after the top-level object");
  if (!has_schema_) {
    return Fail(0, "expected a top-level \"$schema\": \"" + std::string(kSchema) + "\"");
  }
  if (!has_shared_) return Fail(0, "expected a top-level \"shared\" object with \"frames\"");
  if (!has_profiles_) return Fail(0, "expected a top-level \"profiles\" array");
  return Assemble(out);
}

// What every profile must hold before it is turned into samples.
bool Reader::CheckProfile(const RawProfile& p, size_t index) {
  const std::string which = " (profile " + std::to_string(index + 1) + ")";
  if (p.type != "sampled" && p.type != "evented") {
    return Fail(p.pos, "expected \"type\": \"sampled\" or \"evented\"" + which);
  }
  if (!p.has_unit) return Fail(p.pos, "expected a \"unit\"" + which);
  auto frame_ok = [&](uint32_t f) { return f < frames_.size(); };
  if (p.type == "sampled") {
    if (!p.has_samples || !p.has_weights) {
      return Fail(p.pos, "expected \"samples\" and \"weights\" in a sampled profile" + which);
    }
    if (p.weights.size() != p.stack_end.size()) {
      return Fail(p.weights_pos, "expected as many weights as samples (" +
                                     std::to_string(p.stack_end.size()) + " samples, " +
                                     std::to_string(p.weights.size()) + " weights)" + which);
    }
    if (!std::all_of(p.flat_frames.begin(), p.flat_frames.end(), frame_ok)) {
      return Fail(p.samples_pos, "expected frame indices below " + std::to_string(frames_.size()) +
                                     " (the number of frames in \"shared\")" + which);
    }
  } else {
    if (!p.has_events) return Fail(p.pos, "expected \"events\" in an evented profile" + which);
    if (header_.present) {
      return Fail(p.pos, "expected only sampled profiles in a file with inprof's fields" + which);
    }
    for (const OpenClose& e : p.events) {
      if (!frame_ok(e.frame)) {
        return Fail(e.pos, "expected a frame index below " + std::to_string(frames_.size()) +
                               " (the number of frames in \"shared\")" + which);
      }
    }
  }
  const size_t n = p.type == "sampled" ? p.stack_end.size() : 0;
  // Samples past the end of "times_ns" have no time (the writer puts them last).
  if (timeline_ && header_.present && (!p.has_times || p.times.size() > n)) {
    return Fail(p.has_times ? p.times_pos : p.pos,
                "expected \"times_ns\" with at most one time per sample" + which);
  }
  if (timeline_ && header_.present) {
    for (size_t i = 1; i < p.times.size(); ++i) {
      if (p.times[i] < p.times[i - 1]) {
        return Fail(p.times_pos, "expected \"times_ns\" in time order" + which);
      }
    }
  }
  if (p.has_labels) {
    if (p.labels.size() != n) {
      return Fail(p.labels_pos, "expected \"labels\" with one label set per sample" + which);
    }
    for (uint32_t l : p.labels) {
      if (l > header_.label_sets.size()) {
        return Fail(p.labels_pos, "expected label set indices up to " +
                                      std::to_string(header_.label_sets.size()) + " (0: none)" +
                                      which);
      }
    }
  }
  return true;
}

bool Reader::Intern(int64_t tid, uint32_t labels, const uint32_t* frames, size_t depth, size_t pos,
                    uint32_t* index) {
  key_.clear();
  key_.append(reinterpret_cast<const char*>(&tid), sizeof tid);
  key_.append(reinterpret_cast<const char*>(&labels), sizeof labels);
  key_.append(reinterpret_cast<const char*>(frames), depth * sizeof(uint32_t));
  auto [it, added] = samples_.try_emplace(key_, static_cast<uint32_t>(profile_.samples.size()));
  if (added && profile_.samples.size() >= std::numeric_limits<uint32_t>::max()) {
    return Fail(pos, "expected fewer than 2^32 distinct samples");
  }
  if (added) {
    Sample& s = profile_.samples.emplace_back();
    s.frames.assign(frames, frames + depth);
    s.weights = {0};
    s.tid = tid;
    s.labels = labels;
  }
  *index = it->second;
  return true;
}

void Reader::AddWeight(uint32_t sample, int64_t weight, int64_t time_ns, bool timed) {
  int64_t& total = profile_.samples[sample].weights[0];
  if (__builtin_add_overflow(total, weight, &total)) total = std::numeric_limits<int64_t>::max();
  if (timed) profile_.timeline.push_back({time_ns, sample, 0, weight});
}

bool Reader::AddSampled(const RawProfile& p, int64_t tid) {
  const std::string which = " (profile " + std::to_string(&p - profiles_.data() + 1) + ")";
  int64_t start_ns = 0;
  if (!header_.present && unit_.kind == UnitKind::kTime && !Scaled(p.start, p.unit.ns, &start_ns)) {
    return Fail(p.pos, "expected a \"startValue\" within 2^63 nanoseconds" + which);
  }
  int64_t clock = 0;  // plain files: time since the earliest start, the running sum of weights
  if (!header_.present && timeline_ && __builtin_sub_overflow(start_ns, base_ns_, &clock)) {
    return Fail(p.pos, "expected times within 2^63 nanoseconds" + which);
  }
  size_t begin = 0;
  for (size_t i = 0; i < p.stack_end.size(); ++i) {
    const size_t end = p.stack_end[i];
    const Number& w = p.weights[i];
    int64_t weight = 0;
    if (header_.present) {
      if (!w.exact || w.i % header_.scale != 0) {
        return Fail(p.weights_pos,
                    "expected integer weights that are multiples of "
                    "\"weight_scale\" (" +
                        std::to_string(header_.scale) + ")" + which);
      }
      weight = w.i / header_.scale;
    } else if (!Scaled(w, unit_.kind == UnitKind::kTime ? p.unit.ns : 1, &weight)) {
      return Fail(p.weights_pos, "expected weights within 2^63 nanoseconds" + which);
    }
    const uint32_t labels = p.has_labels ? label_index_[p.labels[i]] : 0;
    const bool timed = timeline_ && (!header_.present || i < p.times.size());
    const int64_t time = header_.present && timed ? p.times[i] : clock;
    if (weight != 0) {  // speedscope drops these too
      uint32_t sample = 0;
      if (!Intern(tid, labels, p.flat_frames.data() + begin, end - begin, p.samples_pos, &sample))
        return false;
      AddWeight(sample, weight, time, timed);
    }
    if (!header_.present && timeline_) {
      if (__builtin_add_overflow(clock, weight, &clock)) {
        return Fail(p.weights_pos, "expected times within 2^63 nanoseconds" + which);
      }
      end_ns_ = std::max(end_ns_, clock);
    }
    begin = end;
  }
  return true;
}

// Open/close events become samples: between two events, the open stack had the time between
// them (speedscope's own reading of an evented profile).
bool Reader::AddEvented(const RawProfile& p, int64_t tid) {
  const std::string which = " (profile " + std::to_string(&p - profiles_.data() + 1) + ")";
  const int64_t factor = unit_.kind == UnitKind::kTime ? p.unit.ns : 1;
  // The open frames as a tree: a node is a stack, its parent the stack without its top frame.
  struct Node {
    uint32_t parent;
    uint32_t frame;
    uint32_t depth;
  };
  std::vector<Node> nodes = {{0, 0, 0}};  // 0: nothing open
  std::unordered_map<uint64_t, uint32_t> children;
  std::vector<uint32_t> open;  // node ids, innermost last
  int64_t prev = 0;
  bool has_prev = false;
  std::unordered_map<uint32_t, uint32_t> sample_of;  // node -> its sample, once made
  std::vector<uint32_t> frames;
  auto add_interval = [&](int64_t from, int64_t to, size_t pos) {
    if (open.empty() || to <= from) return true;
    const uint32_t node = open.back();
    auto [it, added] = sample_of.try_emplace(node, 0);
    if (added) {
      // The stack goes through Intern like a sampled one, so equal stacks merge whatever
      // profile or kind they came from; each node is spelled out once per profile.
      const uint32_t depth = nodes[node].depth;
      if (depth > evented_budget_) {
        return Fail(pos, "expected the stacks of evented profiles to hold at most " +
                             std::to_string(kEventedBudgetPerByte) +
                             " frames per byte of input in all (frames nest too deep to keep "
                             "every stack whole)" +
                             which);
      }
      evented_budget_ -= depth;
      frames.resize(depth);
      for (uint32_t n = node, i = depth; n != 0; n = nodes[n].parent) frames[--i] = nodes[n].frame;
      if (!Intern(tid, 0, frames.data(), depth, pos, &it->second)) return false;
    }
    int64_t time = 0;
    if (timeline_ && __builtin_sub_overflow(from, base_ns_, &time)) {
      return Fail(pos, "expected times within 2^63 nanoseconds" + which);
    }
    // Both ends are within 2^63 ns, their distance need not be: it saturates, as totals do.
    int64_t weight = 0;
    if (__builtin_sub_overflow(to, from, &weight)) weight = std::numeric_limits<int64_t>::max();
    AddWeight(it->second, weight, time, timeline_);
    return true;
  };
  for (const OpenClose& e : p.events) {
    int64_t at = 0;
    if (!Scaled(e.at, factor, &at)) {
      return Fail(e.pos, "expected \"at\" within 2^63 nanoseconds" + which);
    }
    if (has_prev && at < prev) return Fail(e.pos, "expected events in order of \"at\"" + which);
    if (has_prev && !add_interval(prev, at, e.pos)) return false;
    if (e.open) {
      const uint32_t parent = open.empty() ? 0 : open.back();
      const uint64_t edge = uint64_t{parent} << 32 | e.frame;
      auto [it, added] = children.try_emplace(edge, static_cast<uint32_t>(nodes.size()));
      if (added) nodes.push_back({parent, e.frame, nodes[parent].depth + 1});
      open.push_back(it->second);
    } else {
      if (open.empty()) {
        return Fail(e.pos, "expected an open frame for this \"C\" event to close" + which);
      }
      if (nodes[open.back()].frame != e.frame) {
        return Fail(e.pos,
                    "expected \"C\" to close frame " + std::to_string(nodes[open.back()].frame) +
                        ", the innermost open frame, not frame " + std::to_string(e.frame) + which);
      }
      open.pop_back();
    }
    prev = at;
    has_prev = true;
  }
  // Frames still open at the end run until "endValue", as speedscope draws them.
  int64_t end = prev;
  if (p.has_end && !Scaled(p.end, factor, &end)) {
    return Fail(p.pos, "expected an \"endValue\" within 2^63 nanoseconds" + which);
  }
  if (has_prev && !add_interval(prev, std::max(end, prev), p.pos)) return false;
  int64_t last = 0;
  if (has_prev && timeline_ && !__builtin_sub_overflow(std::max(end, prev), base_ns_, &last)) {
    end_ns_ = std::max(end_ns_, last);
  }
  return true;
}

bool Reader::Assemble(Profile* out) {
  const bool inprof = header_.present;
  // Plain files: one unit for all profiles (the model has one event); a time unit gives a
  // timeline, with time 0 at the earliest start.
  if (!inprof) {
    bool first = true;
    for (size_t i = 0; i < profiles_.size(); ++i) {
      const RawProfile& p = profiles_[i];
      if (!p.has_unit)
        return Fail(p.pos, "expected a \"unit\" (profile " + std::to_string(i + 1) + ")");
      if (first) {
        unit_ = p.unit;
        first = false;
      } else if (p.unit.kind != unit_.kind) {
        return Fail(p.pos,
                    "expected every profile in the same kind of unit (times, bytes or "
                    "none) as the first (profile " +
                        std::to_string(i + 1) + ")");
      }
    }
    timeline_ = unit_.kind == UnitKind::kTime && !profiles_.empty();
  } else {
    timeline_ = header_.timeline;
  }
  for (size_t i = 0; i < profiles_.size(); ++i) {
    if (!CheckProfile(profiles_[i], i)) return false;
  }

  if (!inprof && timeline_) {
    bool first = true;
    for (const RawProfile& p : profiles_) {
      const int64_t factor = p.unit.ns;
      int64_t start = 0;
      if (!Scaled(p.start, factor, &start)) {
        return Fail(p.pos, "expected a \"startValue\" within 2^63 nanoseconds");
      }
      if (!p.events.empty()) {
        int64_t at = 0;
        if (Scaled(p.events.front().at, factor, &at)) start = std::min(start, at);
      }
      base_ns_ = first ? start : std::min(base_ns_, start);
      first = false;
    }
  }

  // Label sets: identical sets read as one.
  std::map<std::vector<Label>, uint32_t> sets;
  label_index_.assign(header_.label_sets.size() + 1, 0);
  for (size_t i = 0; i < header_.label_sets.size(); ++i) {
    std::vector<Label>& set = header_.label_sets[i];
    if (set.empty()) continue;  // no labels: 0
    auto [it, added] = sets.try_emplace(set, static_cast<uint32_t>(profile_.label_sets.size() + 1));
    if (added) profile_.label_sets.push_back(std::move(set));
    label_index_[i + 1] = it->second;
  }

  // Every evented stack materialized costs its depth: allow a few times the input's size.
  evented_budget_ = (uint64_t{1} << 22) + kEventedBudgetPerByte * uint64_t{text_.size()};
  std::map<int64_t, std::string> names;
  for (size_t i = 0; i < profiles_.size(); ++i) {
    const RawProfile& p = profiles_[i];
    // A plain file's profiles are threads 1, 2, ... in file order, named after the profile.
    const int64_t tid = p.has_tid ? p.tid : inprof ? 0 : static_cast<int64_t>(i + 1);
    const std::string& name = p.has_thread ? p.thread : p.name;
    if (!name.empty()) names.try_emplace(tid, name);
    if (!(p.type == "sampled" ? AddSampled(p, tid) : AddEvented(p, tid))) return false;
  }
  for (auto& [tid, name] : names) profile_.threads.push_back({tid, std::move(name)});
  std::stable_sort(
      profile_.timeline.begin(), profile_.timeline.end(),
      [](const TimedSample& a, const TimedSample& b) { return a.time_ns < b.time_ns; });

  EventInfo event;
  if (inprof && header_.has_event) {
    event = header_.event;
  } else if (inprof) {
    event.name = "samples";
    event.unit = "count";
  } else {
    event.name = unit_.kind == UnitKind::kTime    ? "time"
                 : unit_.kind == UnitKind::kBytes ? "bytes"
                                                  : "samples";
    event.unit = unit_.kind == UnitKind::kTime    ? "nanoseconds"
                 : unit_.kind == UnitKind::kBytes ? "bytes"
                                                  : "count";
    event.period = 1;
  }
  event.total_weight = 0;
  for (const Sample& s : profile_.samples) {
    if (__builtin_add_overflow(event.total_weight, s.weights[0], &event.total_weight)) {
      event.total_weight = std::numeric_limits<int64_t>::max();
    }
  }
  profile_.events.push_back(std::move(event));
  profile_.frames = std::move(frames_);
  if (inprof) {
    profile_.meta = header_.meta;
  } else {
    profile_.meta.program = name_;
    profile_.meta.duration_ns = timeline_ ? end_ns_ : 0;
  }
  *out = std::move(profile_);
  return true;
}

}  // namespace

Status ReadSpeedscope(std::string_view text, const std::string& name, Profile* out) {
  Reader reader(text);
  Profile profile;
  if (!reader.Read(&profile)) {
    const JsonCursor& c = reader.cursor();
    return Status::Error(name + ":" + std::to_string(c.error_line()) + ": " + c.error());
  }
  *out = std::move(profile);
  return Status::Ok();
}

bool LooksLikeSpeedscope(std::string_view text) {
  // speedscope itself recognizes its files by "$schema" alone; inprof writes it first, other
  // exporters after a name and an index. 4 KiB covers both without reading a large file.
  const std::string_view head = text.substr(0, 4096);
  const size_t first = head.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || head[first] != '{') return false;
  const size_t schema = head.find("\"$schema\"");
  if (schema == std::string_view::npos) return false;
  return head.substr(schema, 128).find("speedscope") != std::string_view::npos;
}

}  // namespace inprof
