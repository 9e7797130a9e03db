// Pyroscope push client: bounded queue, one sender thread, jittered backoff. Control path.
#include "net/push_client.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string_view>

#include "inprof/pprof.h"
#include "threads/contained.h"

namespace inprof::internal {
namespace {

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9') || c == '.'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// What Pyroscope is told about the sample types of each event, by the event's name (its pprof
// sample type). Events that are not listed (perf count events such as page-faults or cycles,
// and names this table does not know yet) are pushed alone as "samples", summed.
//
// Grafana Pyroscope reads every field of sample_type_config but, for pprof, acts on
// display-name only: it names the whole request's profile (__name__) from its sample types
// ("wall" when one is called so; else the first whose display-name, or name, contains "cpu"
// -> process_cpu, "alloc_" or "inuse_" -> memory, "mutex_" -> mutex, "block_" -> block; else
// the last one's display-name or name), then keeps each sample type as its own series,
// <__name__>:<type>:<unit>:<period type>:<period unit> (docs/network.md). units, aggregation,
// cumulative and sampled are what its API reference defines and older servers displayed and
// aggregated by; they are sent as true as the window makes them:
//  - every pushed window is a delta, never a running total, so nothing is cumulative: /ingest
//    marks its series __delta__="false" and the server never subtracts one window from the
//    previous itself, which is why alloc_* are pushed per window rather than since start;
//  - in-use memory is a level, not a flow: averaged over windows, never summed;
//  - the time and count events count samples ("samples"); lock events use Pyroscope's lock
//    units, under the display-names its own defaults give contentions and delay.
// `together` names the events pushed in one pprof, as Go's heap profile carries all four
// memory types: the server gives one request one __name__, so only events it files under the
// same name may share a request, and those then share the stacks' encoding once. Every other
// event is a request of its own.
struct PyroscopeType {
  std::string_view event;
  std::string_view units;        // samples, objects, bytes, lock_samples, lock_nanoseconds
  std::string_view aggregation;  // sum | average
  bool cumulative;
  std::string_view display_name;  // "": none
  std::string_view together;      // "": pushed alone
  // CPU time: the periods column ("samples/count") is named "cpu", as Pyroscope's defaults
  // and Go's client name it, so the request is filed under process_cpu ("lua", "task-clock"
  // do not say "cpu" themselves).
  bool cpu_time;
};
constexpr PyroscopeType kPyroscopeTypes[] = {
    {"cpu", "samples", "sum", false, "", "", true},
    {"wall", "samples", "sum", false, "", "", false},
    {"lua", "samples", "sum", false, "", "", true},
    {"task-clock", "samples", "sum", false, "", "", true},
    {"cpu-clock", "samples", "sum", false, "", "", true},
    {"alloc_objects", "objects", "sum", false, "", "memory", false},
    {"alloc_space", "bytes", "sum", false, "", "memory", false},
    {"inuse_objects", "objects", "average", false, "", "memory", false},
    {"inuse_space", "bytes", "average", false, "", "memory", false},
    // The `lock` event (written to pprof as contentions and delay), and those names as a
    // profile read from Go's mutex profile carries them.
    {"lock_contentions", "lock_samples", "sum", false, "mutex_count", "mutex", false},
    {"lock_delay", "lock_nanoseconds", "sum", false, "mutex_duration", "mutex", false},
    // The `cond` event: Pyroscope's block profile, as Go's block profile is pushed.
    {"cond_waits", "lock_samples", "sum", false, "block_count", "block", false},
    {"cond_delay", "lock_nanoseconds", "sum", false, "block_duration", "block", false},
    {"contentions", "lock_samples", "sum", false, "mutex_count", "mutex", false},
    {"delay", "lock_nanoseconds", "sum", false, "mutex_duration", "mutex", false},
};

const PyroscopeType* FindPyroscopeType(std::string_view event) {
  for (const PyroscopeType& t : kPyroscopeTypes) {
    if (t.event == event) return &t;
  }
  return nullptr;
}

void AppendJsonString(std::string_view s, std::string* out) {
  *out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      *out += '\\';
      *out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(c));
      *out += esc;
    } else {
      *out += c;
    }
  }
  *out += '"';
}

// The events of `profile` in push groups, in the order of their first event.
std::vector<std::vector<size_t>> PushGroups(const Profile& profile) {
  std::vector<std::vector<size_t>> groups;
  std::map<std::string_view, size_t> by_name;
  for (size_t e = 0; e < profile.events.size(); ++e) {
    const PyroscopeType* type = FindPyroscopeType(profile.events[e].name);
    if (type != nullptr && !type->together.empty()) {
      auto [it, added] = by_name.emplace(type->together, groups.size());
      if (!added) {
        groups[it->second].push_back(e);
        continue;
      }
    }
    groups.push_back({e});
  }
  return groups;
}

// Everything of `profile` a request body needs but its samples, for the events of one push
// group (their weights are re-indexed by the caller).
Profile GroupFrame(const Profile& profile, const std::vector<size_t>& events) {
  Profile out;
  out.meta = profile.meta;
  for (size_t e : events) out.events.push_back(profile.events[e]);
  out.frames = profile.frames;
  out.health = profile.health;
  out.modules = profile.modules;
  out.threads = profile.threads;
  return out;
}

// sample_type_config for a body made of `profile`: one entry per sample type its pprof has.
std::string SampleTypeConfig(const Profile& profile) {
  std::string json = "{";
  for (const PprofSampleType& column : PprofSampleTypes(profile)) {
    const std::string& event = profile.events[column.event].name;
    const PyroscopeType* type = FindPyroscopeType(event);
    std::string_view units = "samples", aggregation = "sum";
    bool cumulative = false;
    std::string display;
    if (column.counts_periods) {
      // The number of samples taken at sampleRate: Pyroscope's "sampled".
      if (type != nullptr && type->cpu_time) display = "cpu";
    } else if (type != nullptr) {
      units = type->units;
      aggregation = type->aggregation;
      cumulative = type->cumulative;
      display = type->display_name;
    } else if (event.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                       "0123456789_") != std::string::npos) {
      // An unlisted event is filed under a name of its own, the last sample type's: one
      // every Pyroscope version takes as a metric name (page-faults -> page_faults).
      for (char c : event) display += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      if (!display.empty() && std::isdigit(static_cast<unsigned char>(display[0]))) {
        display.insert(display.begin(), '_');
      }
    }
    if (json.size() > 1) json += ',';
    AppendJsonString(column.type, &json);
    json += ":{\"units\":";
    AppendJsonString(units, &json);
    json += ",\"aggregation\":";
    AppendJsonString(aggregation, &json);
    json += cumulative ? ",\"cumulative\":true" : ",\"cumulative\":false";
    json += column.counts_periods ? ",\"sampled\":true" : ",\"sampled\":false";
    if (!display.empty()) {
      json += ",\"display-name\":";
      AppendJsonString(display, &json);
    }
    json += '}';
  }
  json += '}';
  return json;
}

// One series of one push group of a window (its tags are the key it is kept under): the
// samples it pushes and their total weight.
struct Series {
  std::vector<Sample> samples;
  int64_t weight = 0;
};

// The samples with weight in one of `events`, grouped by the series their label set maps to
// (the plain series under no tags), their weights those of `events` in that order. A sample
// keeps its thread but not its labels: they are in the series name, and the body repeating
// them (possibly unsanitised) could only disagree.
std::map<PushTags, Series> SplitBySeries(const Profile& profile, const std::vector<size_t>& events,
                                         const std::vector<PushTags>& set_tags) {
  std::map<PushTags, Series> series;
  static const PushTags kPlain;
  for (const Sample& sample : profile.samples) {
    Sample copy;
    bool any = false;
    int64_t weight = 0;
    for (size_t e : events) {
      const int64_t w = e < sample.weights.size() ? sample.weights[e] : 0;
      copy.weights.push_back(w);
      any = any || w != 0;
      // Series are ranked by weight only within one group, whose events may differ in unit:
      // the sum is an order, not a quantity.
      if (__builtin_add_overflow(weight, w < 0 ? 0 : w, &weight)) weight = INT64_MAX;
    }
    if (!any) continue;
    const PushTags& tags = sample.labels != 0 && sample.labels <= set_tags.size()
                               ? set_tags[sample.labels - 1]
                               : kPlain;
    Series& s = series[tags];
    copy.frames = sample.frames;
    copy.tid = sample.tid;
    s.samples.push_back(std::move(copy));
    if (__builtin_add_overflow(s.weight, weight, &s.weight)) s.weight = INT64_MAX;
  }
  return series;
}

// Keeps at most `budget` label series; the lightest of the others (ties: the later name) go
// into the plain series. Returns how many were merged.
size_t MergeLightest(std::map<PushTags, Series>& series, size_t budget) {
  std::vector<std::map<PushTags, Series>::iterator> labelled;
  for (auto it = series.begin(); it != series.end(); ++it) {
    if (!it->first.empty()) labelled.push_back(it);
  }
  if (labelled.size() <= budget) return 0;
  std::stable_sort(labelled.begin(), labelled.end(), [](const auto& a, const auto& b) {
    return a->second.weight > b->second.weight;
  });
  Series& plain = series[PushTags()];
  for (size_t i = budget; i < labelled.size(); ++i) {
    Series& merged = labelled[i]->second;
    for (Sample& s : merged.samples) plain.samples.push_back(std::move(s));
    if (__builtin_add_overflow(plain.weight, merged.weight, &plain.weight)) {
      plain.weight = INT64_MAX;
    }
    series.erase(labelled[i]);
  }
  return labelled.size() - budget;
}

bool IsUtf8Continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// The length of the valid UTF-8 sequence at `s[i]`, or 0 when it is not one (overlong forms,
// surrogates and code points past U+10FFFF included, as Go's utf8.ValidString refuses them).
size_t Utf8SequenceAt(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (!IsUtf8Continuation(b)) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

bool Retryable(int status) { return status < 0 || status == 408 || status == 429 || status >= 500; }

}  // namespace

Status CheckAppName(std::string_view name) {
  if (name.empty() || name.size() > 128) {
    return Status::Error("application name '" + std::string(name) +
                         "': expected 1 to 128 characters");
  }
  for (char c : name) {
    if (!IsNameChar(c) && c != '-') {
      return Status::Error("application name '" + std::string(name) +
                           "': only letters, digits, '_', '-' and '.' are allowed");
    }
  }
  return Status::Ok();
}

Status ParsePushLabels(std::string_view text,
                       std::vector<std::pair<std::string, std::string>>* labels) {
  labels->clear();
  while (!text.empty()) {
    size_t end = text.find_first_of(",;");
    std::string_view item = Trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Status::Error("label '" + std::string(item) + "': expected NAME=VALUE");
    }
    std::string_view name = Trim(item.substr(0, eq));
    std::string_view value = Trim(item.substr(eq + 1));
    bool ok = !name.empty() && IsNameStart(name.front());
    for (char c : name) ok = ok && IsNameChar(c);
    if (!ok) {
      return Status::Error("label name '" + std::string(name) +
                           "': expected a letter or '_' followed by letters, digits, '_' or '.'");
    }
    if (name == "__name__" || name == "service_name") {
      return Status::Error("label name '" + std::string(name) +
                           "' is reserved (the application name sets it)");
    }
    if (value.empty() || value.find_first_of("{}=,\"") != std::string_view::npos) {
      return Status::Error("label '" + std::string(name) + "': the value '" + std::string(value) +
                           "' must be non-empty and may not contain '{', '}', '=', ',' or '\"'");
    }
    for (const auto& [existing, v] : *labels) {
      if (existing == name) return Status::Error("label '" + std::string(name) + "' given twice");
    }
    labels->emplace_back(std::string(name), std::string(value));
  }
  return Status::Ok();
}

PushTags PushSeriesTags(const PushOptions& options, const std::vector<Label>& labels) {
  PushTags tags;
  for (const Label& label : labels) {
    std::string key;
    for (char c : label.key) key += IsNameChar(c) ? c : '_';
    if (!key.empty() && !IsNameStart(key.front())) key.insert(key.begin(), '_');
    if (key.size() > kMaxPushTagKey) key.resize(kMaxPushTagKey);
    if (key.empty() || key == "service_name" || key.starts_with("__")) continue;
    bool taken = false;
    for (const auto& [name, value] : options.labels) taken = taken || name == key;
    for (const auto& [name, value] : tags) taken = taken || name == key;
    if (taken) continue;
    // What the name syntax reserves, control characters and invalid UTF-8 (Pyroscope refuses
    // a label value that is not UTF-8) each become '_'; a value is cut at a character
    // boundary, well under Pyroscope's default limit of 2048 bytes.
    std::string value;
    const std::string_view raw = label.value;
    for (size_t i = 0; i < raw.size();) {
      const size_t n = Utf8SequenceAt(raw, i);
      const size_t take = n == 0 ? 1 : n;
      if (value.size() + take > kMaxPushTagValue) break;
      const auto c = static_cast<unsigned char>(raw[i]);
      if (n == 0 || c < 0x20 || c == 0x7f || std::strchr("{}=,\"", c) != nullptr) {
        value += '_';
      } else {
        value.append(raw.substr(i, n));
      }
      i += take;
    }
    if (value.empty()) continue;
    tags.emplace_back(std::move(key), std::move(value));
  }
  return tags;
}

std::string IngestPathAndQuery(const PushOptions& options, int64_t from_unix_s,
                               int64_t until_unix_s, double sample_rate_hz, const PushTags& tags) {
  // The application name alone: for a pprof body Pyroscope takes the name before '{' as
  // service_name whole (an ".cpu" suffix would make every event a service of its own) and
  // names the profile from the sample types.
  std::string name = options.app_name + "{";
  bool first = true;
  for (const PushTags* list : {&options.labels, &tags}) {
    for (const auto& [key, value] : *list) {
      if (!first) name += ",";
      first = false;
      name += key + "=" + value;
    }
  }
  name += "}";
  std::string q = "/ingest?name=" + PercentEncode(name);
  q += "&from=" + std::to_string(from_unix_s);
  q += "&until=" + std::to_string(until_unix_s);
  if (sample_rate_hz > 0) q += "&sampleRate=" + std::to_string(std::lround(sample_rate_hz));
  // No format=pprof: the server checks `format` before the Content-Type, and with
  // format=pprof it would take the whole multipart body for the pprof.
  q += "&spyName=inprof";
  return q;
}

PushForm MultipartPushForm(const std::string& pprof, const std::string& config, uint64_t seed) {
  // Pyroscope's form reader (Go's multipart.Reader.ReadForm) files a part under File only
  // when its Content-Disposition has a filename, and the ingest code reads File only: a part
  // without one would be a text value the server never looks at.
  std::string boundary;
  for (uint64_t n = seed;; ++n) {
    char text[40];
    std::snprintf(text, sizeof text, "inprof-%016llx", static_cast<unsigned long long>(n));
    boundary = text;
    if (pprof.find(boundary) == std::string::npos && config.find(boundary) == std::string::npos) {
      break;
    }
  }
  PushForm form;
  std::string& body = form.body;
  body.reserve(pprof.size() + config.size() + 400);
  body += "--" + boundary + "\r\n";
  body += "Content-Disposition: form-data; name=\"profile\"; filename=\"profile.pb.gz\"\r\n";
  body += "Content-Type: application/octet-stream\r\n\r\n";
  body += pprof;
  body += "\r\n--" + boundary + "\r\n";
  body +=
      "Content-Disposition: form-data; name=\"sample_type_config\"; "
      "filename=\"sample_type_config.json\"\r\n";
  body += "Content-Type: application/json\r\n\r\n";
  body += config;
  body += "\r\n--" + boundary + "--\r\n";
  form.content_type = "multipart/form-data; boundary=" + boundary;
  return form;
}

PushClient::PushClient(PushOptions options, ThreadStarter starter)
    : options_(std::move(options)), starter_(std::move(starter)) {
  std::random_device seed;
  rng_.seed((static_cast<uint64_t>(seed()) << 32) ^ static_cast<uint64_t>(getpid()));
  boundary_seed_ = (static_cast<uint64_t>(seed()) << 32) ^ seed();
}

PushClient::~PushClient() {
  Stop(std::chrono::milliseconds(0));
  // Only our own: a number the program closed and reused is the program's file now.
  if (cancel_fd_ >= 0 && StillOurs(cancel_fd_, cancel_id_)) close(cancel_fd_);
}

Status PushClient::Start() {
  cancel_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (cancel_fd_ < 0) {
    return Status::Error(std::string("cannot create an eventfd: ") + std::strerror(errno));
  }
  cancel_id_ = IdentityOf(cancel_fd_);
  if (!starter_(&thread_, &PushClient::Entry, this)) {
    return Status::Error(std::string("cannot start the push thread"));
  }
  running_ = true;
  return Status::Ok();
}

void PushClient::Enqueue(const Profile& profile, int64_t start_unix_ns, int64_t end_unix_ns) {
  // Pyroscope takes whole seconds; a window shorter than one still covers [from, until].
  const int64_t from = start_unix_ns / 1000000000;
  const int64_t until = std::max<int64_t>(from + 1, (end_unix_ns + 999999999) / 1000000000);
  std::vector<PushTags> set_tags;
  set_tags.reserve(profile.label_sets.size());
  for (const std::vector<Label>& set : profile.label_sets) {
    set_tags.push_back(PushSeriesTags(options_, set));
  }
  const std::vector<std::vector<size_t>> groups = PushGroups(profile);
  std::vector<std::map<PushTags, Series>> per_group;
  size_t groups_with_samples = 0;
  for (const std::vector<size_t>& events : groups) {
    per_group.push_back(SplitBySeries(profile, events, set_tags));
    if (!per_group.back().empty()) ++groups_with_samples;
  }
  // One window never makes more requests than the queue holds, or it would push its own
  // first requests out: each group gets the plain series and an equal share of the rest.
  const size_t budget = groups_with_samples == 0
                            ? 0
                            : std::max<size_t>(options_.max_windows / groups_with_samples, 1) - 1;
  size_t merged = 0;
  std::vector<Request> requests;
  for (size_t g = 0; g < groups.size(); ++g) {
    std::map<PushTags, Series>& series = per_group[g];
    if (series.empty()) continue;
    merged += MergeLightest(series, budget);
    Profile body_profile = GroupFrame(profile, groups[g]);
    const std::string config = SampleTypeConfig(body_profile);
    for (auto& [tags, one] : series) {  // the plain series first: empty tags sort first
      body_profile.samples = std::move(one.samples);
      std::ostringstream pprof;
      if (!WritePprof(body_profile, pprof)) continue;
      Request r;
      r.id = ++next_id_;
      r.path_and_query =
          IngestPathAndQuery(options_, from, until, body_profile.events[0].frequency_hz, tags);
      PushForm form = MultipartPushForm(pprof.str(), config, boundary_seed_ ^ r.id);
      r.content_type = std::move(form.content_type);
      r.body = std::make_shared<const std::string>(std::move(form.body));
      requests.push_back(std::move(r));
    }
  }
  {
    MutexLock lock(&mu_);
    ++stats_.windows;
    stats_.merged_series += merged;
    for (Request& r : requests) {
      ++stats_.requests;
      if (stopping_) {
        ++stats_.dropped;
        continue;
      }
      stats_.queued_bytes += r.body->size();
      queue_.push_back(std::move(r));
      // Oldest first out: the newest windows say most about the process now.
      while (queue_.size() > options_.max_windows ||
             (stats_.queued_bytes > options_.max_bytes && queue_.size() > 1)) {
        stats_.queued_bytes -= queue_.front().body->size();
        queue_.pop_front();
        ++stats_.dropped;
      }
    }
    stats_.queued = queue_.size();
  }
  cv_.NotifyAll();  // the sender, and Stop may wait on the same variable
}

void PushClient::Stop(std::chrono::milliseconds flush) {
  if (!running_) return;
  running_ = false;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    flush_deadline_ = std::chrono::steady_clock::now() + flush;
  }
  cv_.NotifyAll();
  {
    // The sender ends by itself once the queue is empty or the deadline has passed between
    // requests; a request in flight at the deadline is cut off here.
    MutexLock lock(&mu_);
    while (!sender_done_ && cv_.WaitUntil(&mu_, flush_deadline_)) {
    }
    if (!sender_done_) {
      if (StillOurs(cancel_fd_, cancel_id_)) {
        const uint64_t one = 1;
        [[maybe_unused]] ssize_t n = write(cancel_fd_, &one, sizeof one);
      } else {
        // Never write into the program's file: the request in flight ends at its own
        // timeout instead of the flush time.
        std::fprintf(stderr,
                     "inprof: push: the program closed the push client's eventfd (fd %d, "
                     "closefrom?): the request in flight ends at its own timeout\n",
                     cancel_fd_);
      }
    }
  }
  pthread_join(thread_, nullptr);
  MutexLock lock(&mu_);
  stats_.dropped += queue_.size();
  queue_.clear();
  stats_.queued = 0;
  stats_.queued_bytes = 0;
}

PushStats PushClient::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

std::string PushClient::Summary() const {
  PushStats s = stats();
  std::string out = "push to " + options_.url.text + ": " + std::to_string(s.sent) + " of " +
                    std::to_string(s.requests) + " requests sent";
  if (s.dropped > 0) out += ", " + std::to_string(s.dropped) + " dropped";
  if (s.rejected > 0) out += ", " + std::to_string(s.rejected) + " rejected";
  if (s.retries > 0) out += ", " + std::to_string(s.retries) + " retries";
  if (s.merged_series > 0) {
    out += ", " + std::to_string(s.merged_series) +
           " label series pushed unlabelled (more per window than the queue holds)";
  }
  if (!s.last_error.empty()) out += " (last error: " + s.last_error + ")";
  return out;
}

void* PushClient::Entry(void* self) {
  // An exception leaving a thread's entry function ends the program (std::terminate). Run
  // holds its lock through a MutexLock, so after a failure (out of memory building a
  // request) the sender ends cleanly: Stop still joins it and counts what is left as dropped.
  auto* client = static_cast<PushClient*>(self);
  try {
    client->Run();
  } catch (const std::exception& e) {
    CountContained(ContainedAt::kNetwork);
    try {
      client->Log(std::string("push sender stopped: ") + e.what());
    } catch (...) {
    }
  } catch (...) {
    CountContained(ContainedAt::kNetwork);
  }
  {
    MutexLock lock(&client->mu_);
    client->sender_done_ = true;
  }
  client->cv_.NotifyAll();
  return nullptr;
}

void PushClient::Log(const std::string& message) {
  if (!options_.quiet) std::fprintf(stderr, "inprof: %s\n", message.c_str());
}

// One piece: the loop holds mu_ across its steps and lets go of it only around the request
// and each log line; split, every part would take and hand back the same lock.
void PushClient::Run() {
  HttpFields headers;
  if (!options_.tenant.empty()) headers.emplace_back("X-Scope-OrgID", options_.tenant);
  int attempt = 0;
  MutexLock lock(&mu_);
  for (;;) {
    while (!stopping_ && queue_.empty()) cv_.Wait(&mu_);
    if (queue_.empty()) return;  // stopping, nothing left
    if (stopping_ && std::chrono::steady_clock::now() >= flush_deadline_) return;
    // The request leaves the queue while it is tried; a retryable failure puts it back at the
    // head if there is room, else it is the oldest and is dropped.
    Request request = std::move(queue_.front());
    queue_.pop_front();
    stats_.queued_bytes -= request.body->size();
    stats_.queued = queue_.size();
    int timeout = options_.timeout_ms;
    if (stopping_) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      flush_deadline_ - std::chrono::steady_clock::now())
                      .count();
      timeout = static_cast<int>(std::clamp<long long>(left, 1, timeout));
    }
    lock.Unlock();
    HttpClientResult result =
        HttpPost(options_.url, request.path_and_query, headers, request.content_type, *request.body,
                 timeout, StillOurs(cancel_fd_, cancel_id_) ? cancel_fd_ : -1);
    lock.Lock();
    if (result.status >= 200 && result.status < 300) {
      ++stats_.sent;
      attempt = 0;
      stats_.last_error.clear();
      if (failing_) {
        failing_ = false;
        lock.Unlock();
        Log("push to " + options_.url.text + " works again");
        lock.Lock();
      }
      continue;
    }
    std::string error =
        result.status > 0
            ? "HTTP " + std::to_string(result.status) +
                  (result.body.empty() ? "" : ": " + std::string(Trim(result.body.substr(0, 200))))
            : result.error;
    while (!error.empty() && (error.back() == '\n' || error.back() == '\r')) error.pop_back();
    stats_.last_error = error;
    if (stopping_ && std::chrono::steady_clock::now() >= flush_deadline_) {
      // Cut off at the flush deadline (or failed just as it passed): no retry is left.
      ++stats_.dropped;
      return;
    }
    if (!Retryable(result.status)) {
      ++stats_.rejected;
      lock.Unlock();
      Log("push to " + options_.url.text + " rejected a window: " + error);
      lock.Lock();
      continue;
    }
    ++stats_.retries;
    if (queue_.size() < options_.max_windows &&
        (queue_.empty() || stats_.queued_bytes + request.body->size() <= options_.max_bytes)) {
      stats_.queued_bytes += request.body->size();
      queue_.push_front(std::move(request));
      stats_.queued = queue_.size();
    } else {
      ++stats_.dropped;
    }
    // Full jitter: uniformly in [0, min(max, initial * 2^attempt)], so a fleet that lost its
    // backend does not come back in lockstep.
    const double cap = std::min<double>(static_cast<double>(options_.backoff_max.count()),
                                        static_cast<double>(options_.backoff_initial.count()) *
                                            std::ldexp(1.0, std::min(attempt, 20)));
    ++attempt;
    std::uniform_real_distribution<double> jitter(0.0, cap);
    const auto delay = std::chrono::milliseconds(static_cast<int64_t>(jitter(rng_)) + 1);
    if (!failing_) {
      failing_ = true;
      const size_t queued = queue_.size();
      lock.Unlock();
      Log("push to " + options_.url.text + " failed: " + error + "; retrying with backoff (" +
          std::to_string(queued) + " requests queued, the oldest are dropped past " +
          std::to_string(options_.max_windows) + ")");
      lock.Lock();
    }
    if (stopping_) {
      // Flushing at exit: retry only within the deadline.
      if (std::chrono::steady_clock::now() + delay >= flush_deadline_) return;
    }
    const auto retry_at = std::chrono::steady_clock::now() + delay;
    while (!(stopping_ && std::chrono::steady_clock::now() >= flush_deadline_) &&
           cv_.WaitUntil(&mu_, retry_at)) {
    }
  }
}

}  // namespace inprof::internal
