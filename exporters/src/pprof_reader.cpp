// pprof read back: profile.proto (github.com/google/pprof/proto/profile.proto), gzipped or
// not, as inprof writes it (pprof.cpp) and as Go's runtime/pprof, `go tool pprof -proto` and
// other profilers write it.
//
// The message is decoded by hand, after https://protobuf.dev/programming-guides/encoding/:
// the few messages of profile.proto do not justify a protobuf dependency, and a hand decoder
// can be bounded by its input. Every repeated scalar is accepted packed and unpacked, unknown
// fields of any wire type are skipped, as a conforming reader must.
//
// Into the model: one event per sample type (the default sample type first, so it is what
// the viewer shows without --event), values as they are in the type's unit (period 1); each
// Location becomes its native frame (the outermost Line) followed by one inlined frame per
// further Line, which is the model's root-first nesting of pprof's innermost-first lines; a
// Location without lines names its mapping and offset. "thread id"/"thread name" labels
// become the sample's thread, every other label a Label. Memory grows with the input only:
// counts in the message are never used to size anything.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <zlib.h>

#include "inprof/pprof.h"

namespace inprof {
namespace {

// Field numbers of profile.proto.
namespace field {
constexpr uint32_t kSampleType = 1, kSample = 2, kMapping = 3, kLocation = 4, kFunction = 5,
                   kStringTable = 6, kTimeNanos = 9, kDurationNanos = 10, kComment = 13,
                   kDefaultSampleType = 14;
}  // namespace field

// One field of a message: its number and either its varint value or its bytes.
struct WireField {
  uint32_t number = 0;
  uint32_t wire = 0;
  uint64_t value = 0;
  std::string_view bytes;
};

class WireReader {
 public:
  WireReader(std::string_view data, size_t base) : data_(data), base_(base) {}
  bool done() const { return pos_ >= data_.size(); }
  size_t offset() const { return base_ + pos_; }
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return false;
      const auto b = static_cast<uint8_t>(data_[pos_++]);
      *v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  // The next field; false on malformed input (truncated, a group, a bad wire type).
  bool Next(WireField* f, size_t* bytes_offset) {
    uint64_t tag = 0;
    if (!Varint(&tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX) return false;
    f->number = static_cast<uint32_t>(tag >> 3);
    f->wire = static_cast<uint32_t>(tag & 7);
    switch (f->wire) {
      case 0:
        return Varint(&f->value);
      case 1:
      case 5: {
        const size_t n = f->wire == 1 ? 8 : 4;
        if (data_.size() - pos_ < n) return false;
        pos_ += n;
        return true;
      }
      case 2: {
        uint64_t n = 0;
        if (!Varint(&n) || n > data_.size() - pos_) return false;
        *bytes_offset = base_ + pos_;
        f->bytes = data_.substr(pos_, n);
        pos_ += n;
        return true;
      }
      default:
        return false;
    }
  }

 private:
  std::string_view data_;
  size_t base_;
  size_t pos_ = 0;
};

struct PLine {
  uint64_t function_id = 0;
  int64_t line = 0;
  int64_t column = 0;
};
struct PLocation {
  uint64_t id = 0;
  uint64_t mapping_id = 0;
  uint64_t address = 0;
  std::vector<PLine> lines;  // innermost first
};
struct PFunction {
  uint64_t id = 0;
  int64_t name = 0, system_name = 0, filename = 0;
};
struct PMapping {
  uint64_t id = 0, start = 0, limit = 0, offset = 0;
  int64_t filename = 0, build_id = 0;
};
struct PLabel {
  int64_t key = 0, str = 0, num = 0, num_unit = 0;
};
struct PSample {
  std::vector<uint64_t> locations;  // leaf first
  std::vector<int64_t> values;
  std::vector<PLabel> labels;
};
struct PValueType {
  int64_t type = 0, unit = 0;
};

class PprofDecoder {
 public:
  explicit PprofDecoder(const std::string& name) : name_(name) {}

  Status Decode(std::string_view data, Profile* out) {
    if (!Message(data, 0, [&](const WireField& f, size_t at) { return Top(f, at); })) {
      return Fail(error_at_, error_.empty() ? "malformed protobuf" : error_);
    }
    if (strings_.empty() || !strings_[0].empty()) {
      return Status::InvalidArgument(name_ +
                                     ": pprof: string_table[0] must be the empty string (this "
                                     "is not a profile.proto message)");
    }
    if (types_.empty()) return Status::InvalidArgument(name_ + ": pprof: no sample types");
    return Build(out);
  }

 private:
  // Calls fn(field, offset of the field's bytes) for every field of `data`.
  template <typename Fn>
  bool Message(std::string_view data, size_t base, Fn fn) {
    WireReader r(data, base);
    while (!r.done()) {
      WireField f;
      size_t at = r.offset();
      const size_t start = at;
      if (!r.Next(&f, &at)) {
        error_at_ = start;
        return false;
      }
      if (!fn(f, at)) {
        if (error_at_ == 0) error_at_ = start;
        return false;
      }
    }
    return true;
  }

  // A repeated scalar, packed (bytes) or one value.
  template <typename T>
  bool Repeated(const WireField& f, size_t at, std::vector<T>* out) {
    if (f.wire == 0) {
      out->push_back(static_cast<T>(f.value));
      return true;
    }
    if (f.wire != 2) return true;
    WireReader r(f.bytes, at);
    while (!r.done()) {
      uint64_t v = 0;
      if (!r.Varint(&v)) {
        error_at_ = r.offset();
        return false;
      }
      out->push_back(static_cast<T>(v));
    }
    return true;
  }

  static int64_t I64(uint64_t v) { return static_cast<int64_t>(v); }

  bool ValueType(const WireField& f, size_t at, PValueType* v) {
    if (f.wire != 2) return true;
    return Message(f.bytes, at, [&](const WireField& g, size_t) {
      if (g.wire != 0) return true;
      if (g.number == 1) v->type = I64(g.value);
      if (g.number == 2) v->unit = I64(g.value);
      return true;
    });
  }

  bool Top(const WireField& f, size_t at) {
    switch (f.number) {
      case field::kSampleType:
        return ValueType(f, at, &types_.emplace_back());
      case field::kSample: {
        if (f.wire != 2) return true;
        PSample& s = samples_.emplace_back();
        return Message(f.bytes, at, [&](const WireField& g, size_t gat) {
          if (g.number == 1) return Repeated(g, gat, &s.locations);
          if (g.number == 2) return Repeated(g, gat, &s.values);
          if (g.number == 3 && g.wire == 2) {
            PLabel& l = s.labels.emplace_back();
            return Message(g.bytes, gat, [&](const WireField& h, size_t) {
              if (h.wire != 0) return true;
              if (h.number == 1) l.key = I64(h.value);
              if (h.number == 2) l.str = I64(h.value);
              if (h.number == 3) l.num = I64(h.value);
              if (h.number == 4) l.num_unit = I64(h.value);
              return true;
            });
          }
          return true;
        });
      }
      case field::kMapping: {
        if (f.wire != 2) return true;
        PMapping& m = mappings_.emplace_back();
        return Message(f.bytes, at, [&](const WireField& g, size_t) {
          if (g.wire != 0) return true;
          if (g.number == 1) m.id = g.value;
          if (g.number == 2) m.start = g.value;
          if (g.number == 3) m.limit = g.value;
          if (g.number == 4) m.offset = g.value;
          if (g.number == 5) m.filename = I64(g.value);
          if (g.number == 6) m.build_id = I64(g.value);
          return true;
        });
      }
      case field::kLocation: {
        if (f.wire != 2) return true;
        PLocation& l = locations_.emplace_back();
        return Message(f.bytes, at, [&](const WireField& g, size_t gat) {
          if (g.number == 4 && g.wire == 2) {
            PLine& line = l.lines.emplace_back();
            return Message(g.bytes, gat, [&](const WireField& h, size_t) {
              if (h.wire != 0) return true;
              if (h.number == 1) line.function_id = h.value;
              if (h.number == 2) line.line = I64(h.value);
              if (h.number == 3) line.column = I64(h.value);
              return true;
            });
          }
          if (g.wire != 0) return true;
          if (g.number == 1) l.id = g.value;
          if (g.number == 2) l.mapping_id = g.value;
          if (g.number == 3) l.address = g.value;
          return true;
        });
      }
      case field::kFunction: {
        if (f.wire != 2) return true;
        PFunction& fn = functions_.emplace_back();
        return Message(f.bytes, at, [&](const WireField& g, size_t) {
          if (g.wire != 0) return true;
          if (g.number == 1) fn.id = g.value;
          if (g.number == 2) fn.name = I64(g.value);
          if (g.number == 3) fn.system_name = I64(g.value);
          if (g.number == 4) fn.filename = I64(g.value);
          return true;
        });
      }
      case field::kStringTable:
        if (f.wire != 2) {
          error_ = "string_table entries must be strings";
          return false;
        }
        strings_.emplace_back(f.bytes);
        return true;
      case field::kTimeNanos:
        if (f.wire == 0) time_nanos_ = I64(f.value);
        return true;
      case field::kDurationNanos:
        if (f.wire == 0) duration_nanos_ = I64(f.value);
        return true;
      case field::kComment:
        return Repeated(f, at, &comments_);
      case field::kDefaultSampleType:
        if (f.wire == 0) default_type_ = I64(f.value);
        return true;
      default:
        return true;
    }
  }

  Status Fail(size_t at, const std::string& what) const {
    return Status::InvalidArgument(name_ + ": pprof: " + what + " at byte " + std::to_string(at) +
                                   " of the profile.proto message");
  }
  Status Bad(const std::string& what) const {
    return Status::InvalidArgument(name_ + ": pprof: " + what);
  }

  // The string at `index`, or false when the table has none there.
  bool Str(int64_t index, std::string* out) const {
    if (index < 0 || static_cast<uint64_t>(index) >= strings_.size()) return false;
    *out = strings_[static_cast<size_t>(index)];
    return true;
  }
  Status BadString(const std::string& what, int64_t index) const {
    return Bad(what + " names string " + std::to_string(index) + ", but the string table has " +
               std::to_string(strings_.size()));
  }

  static std::string Hex(uint64_t v) {
    static const char kDigits[] = "0123456789abcdef";
    std::string s;
    do {
      s.insert(s.begin(), kDigits[v & 15]);
      v >>= 4;
    } while (v != 0);
    return "0x" + s;
  }

  static uint32_t Clamp32(int64_t v) {
    return v <= 0 ? 0 : v > int64_t{UINT32_MAX} ? UINT32_MAX : static_cast<uint32_t>(v);
  }

  Status Build(Profile* out) {
    Profile p;
    // Events: the default sample type first (pprof: the last one when none is named).
    size_t first = types_.size() - 1;
    std::string default_name;
    if (default_type_ != 0) {
      if (!Str(default_type_, &default_name))
        return BadString("default_sample_type", default_type_);
    }
    std::vector<size_t> order;
    bool named = false;  // two types of one name: the first is the default
    for (size_t i = 0; i < types_.size(); ++i) {
      std::string type;
      if (!Str(types_[i].type, &type))
        return BadString("sample type " + std::to_string(i + 1), types_[i].type);
      if (!named && !default_name.empty() && type == default_name) {
        first = i;
        named = true;
      }
    }
    order.push_back(first);
    for (size_t i = 0; i < types_.size(); ++i) {
      if (i != first) order.push_back(i);
    }
    for (size_t i : order) {
      EventInfo e;
      Str(types_[i].type, &e.name);
      if (!Str(types_[i].unit, &e.unit))
        return BadString("sample type " + std::to_string(i + 1), types_[i].unit);
      if (e.name.empty()) e.name = "sample type " + std::to_string(i + 1);
      if (e.unit.empty()) e.unit = "count";
      e.period = 1;
      p.events.push_back(std::move(e));
    }

    std::unordered_map<uint64_t, size_t> functions, mappings, locations;
    for (size_t i = 0; i < functions_.size(); ++i) {
      if (functions_[i].id == 0) return Bad("function " + std::to_string(i + 1) + " has id 0");
      if (!functions.emplace(functions_[i].id, i).second) {
        return Bad("two functions have id " + std::to_string(functions_[i].id));
      }
    }
    for (size_t i = 0; i < mappings_.size(); ++i) {
      if (mappings_[i].id == 0) return Bad("mapping " + std::to_string(i + 1) + " has id 0");
      if (!mappings.emplace(mappings_[i].id, i).second) {
        return Bad("two mappings have id " + std::to_string(mappings_[i].id));
      }
      Module m;
      if (!Str(mappings_[i].filename, &m.path))
        return BadString("a mapping", mappings_[i].filename);
      if (!Str(mappings_[i].build_id, &m.build_id))
        return BadString("a mapping", mappings_[i].build_id);
      m.start = mappings_[i].start;
      m.limit = mappings_[i].limit;
      m.offset = mappings_[i].offset;
      if (p.meta.program.empty() && !m.path.empty()) p.meta.program = m.path;
      p.modules.push_back(std::move(m));
    }

    // Each location's frames, root first: the native frame (the outermost line), then the
    // functions inlined into it, outer to inner.
    std::vector<std::vector<uint32_t>> location_frames(locations_.size());
    for (size_t i = 0; i < locations_.size(); ++i) {
      const PLocation& l = locations_[i];
      if (l.id == 0) return Bad("location " + std::to_string(i + 1) + " has id 0");
      if (!locations.emplace(l.id, i).second)
        return Bad("two locations have id " + std::to_string(l.id));
      const Module* module = nullptr;
      if (l.mapping_id != 0) {
        auto m = mappings.find(l.mapping_id);
        if (m == mappings.end()) {
          return Bad("location " + std::to_string(l.id) + " refers to mapping " +
                     std::to_string(l.mapping_id) + ", which the profile does not have");
        }
        module = &p.modules[m->second];
      }
      const uint64_t address = l.address;
      if (l.lines.empty()) {
        Frame frame;
        frame.address = address;
        if (module) {
          frame.module = module->path;
          const std::string base = module->path.substr(module->path.rfind('/') + 1);
          frame.function = (base.empty() ? std::string("[unknown]") : base) + "+" +
                           Hex(address - module->start + module->offset);
        } else {
          frame.function = Hex(address);
        }
        location_frames[i].push_back(static_cast<uint32_t>(p.frames.size()));
        p.frames.push_back(std::move(frame));
        continue;
      }
      for (size_t k = l.lines.size(); k-- > 0;) {
        const PLine& line = l.lines[k];
        auto fn = functions.find(line.function_id);
        if (fn == functions.end()) {
          return Bad("location " + std::to_string(l.id) + " refers to function " +
                     std::to_string(line.function_id) + ", which the profile does not have");
        }
        const PFunction& pf = functions_[fn->second];
        Frame frame;
        if (!Str(pf.name, &frame.function))
          return BadString("function " + std::to_string(pf.id), pf.name);
        if (frame.function.empty() && !Str(pf.system_name, &frame.function)) {
          return BadString("function " + std::to_string(pf.id), pf.system_name);
        }
        if (frame.function.empty()) frame.function = "[unknown]";
        if (!Str(pf.filename, &frame.file))
          return BadString("function " + std::to_string(pf.id), pf.filename);
        frame.line = Clamp32(line.line);
        frame.column = Clamp32(line.column);
        frame.address = address;
        if (module) frame.module = module->path;
        frame.kind = k + 1 == l.lines.size() ? FrameKind::kNative : FrameKind::kInlined;
        location_frames[i].push_back(static_cast<uint32_t>(p.frames.size()));
        p.frames.push_back(std::move(frame));
      }
    }

    // Samples: equal stacks, threads and labels are one Sample (the model's rule).
    std::map<std::tuple<std::vector<uint32_t>, int64_t, uint32_t>, size_t> merged;
    std::map<std::vector<Label>, uint32_t> label_sets;
    std::map<int64_t, std::string> thread_names;
    for (size_t si = 0; si < samples_.size(); ++si) {
      const PSample& s = samples_[si];
      if (s.values.size() != types_.size()) {
        return Bad("sample " + std::to_string(si + 1) + " has " + std::to_string(s.values.size()) +
                   " values for " + std::to_string(types_.size()) + " sample types");
      }
      std::vector<uint32_t> frames;
      for (auto id = s.locations.rbegin(); id != s.locations.rend(); ++id) {
        auto l = locations.find(*id);
        if (l == locations.end()) {
          return Bad("sample " + std::to_string(si + 1) + " refers to location " +
                     std::to_string(*id) + ", which the profile does not have");
        }
        const std::vector<uint32_t>& f = location_frames[l->second];
        frames.insert(frames.end(), f.begin(), f.end());
      }
      int64_t tid = 0;
      std::string thread_name;
      std::vector<Label> labels;
      for (const PLabel& pl : s.labels) {
        std::string key, value, unit;
        if (!Str(pl.key, &key)) return BadString("a label", pl.key);
        if (!Str(pl.str, &value)) return BadString("a label", pl.str);
        if (!Str(pl.num_unit, &unit)) return BadString("a label", pl.num_unit);
        if (key == "thread id" && pl.str == 0) {
          tid = pl.num;
          continue;
        }
        // The thread's name, as inprof writes it; a number under that key names nothing and
        // would come back from the writer as a name (found by mutating the seeds).
        if (key == "thread name") {
          if (pl.str != 0) thread_name = value;
          continue;
        }
        if (pl.str == 0) value = std::to_string(pl.num) + (unit.empty() ? "" : " " + unit);
        // One value per key, as the model keeps labels: the first one pprof listed.
        if (std::none_of(labels.begin(), labels.end(),
                         [&](const Label& x) { return x.key == key; })) {
          labels.push_back({key, value});
        }
      }
      if (tid != 0 && !thread_name.empty()) thread_names[tid] = thread_name;
      std::sort(labels.begin(), labels.end());
      uint32_t label_index = 0;
      if (!labels.empty()) {
        auto [it, added] =
            label_sets.emplace(labels, static_cast<uint32_t>(p.label_sets.size() + 1));
        if (added) p.label_sets.push_back(labels);
        label_index = it->second;
      }
      auto [it, added] =
          merged.emplace(std::make_tuple(std::move(frames), tid, label_index), p.samples.size());
      if (added) {
        Sample sample;
        sample.frames = std::get<0>(it->first);
        sample.weights.assign(types_.size(), 0);
        sample.tid = tid;
        sample.labels = label_index;
        p.samples.push_back(std::move(sample));
      }
      Sample& sample = p.samples[it->second];
      for (size_t e = 0; e < order.size(); ++e) {
        int64_t& w = sample.weights[e];
        if (__builtin_add_overflow(w, s.values[order[e]], &w))
          w = s.values[order[e]] < 0 ? INT64_MIN : INT64_MAX;
      }
    }
    for (const Sample& s : p.samples) {
      for (size_t e = 0; e < p.events.size(); ++e) {
        int64_t& t = p.events[e].total_weight;
        if (__builtin_add_overflow(t, s.weights[e], &t))
          t = s.weights[e] < 0 ? INT64_MIN : INT64_MAX;
      }
    }
    for (const auto& [tid, name] : thread_names) p.threads.push_back({tid, name});
    p.meta.start_time_ns = time_nanos_;
    p.meta.duration_ns = duration_nanos_;
    // inprof's writer names the program in a comment ("program: PATH (pid N)"): that one,
    // else the first mapping's file.
    for (int64_t c : comments_) {
      std::string text;
      if (!Str(c, &text)) return BadString("a comment", c);
      const size_t pid = text.rfind(" (pid ");
      if (text.starts_with("program: ") && pid != std::string::npos && pid >= 9 &&
          text.ends_with(")")) {
        p.meta.program = text.substr(9, pid - 9);
        int64_t n = 0;
        for (char ch : std::string_view(text).substr(pid + 6, text.size() - pid - 7)) {
          if (ch < '0' || ch > '9' || n > INT64_MAX / 10 - 9) {
            n = 0;
            break;
          }
          n = n * 10 + (ch - '0');
        }
        p.meta.pid = n;
      }
    }
    *out = std::move(p);
    return Status::Ok();
  }

  const std::string& name_;
  std::string error_;
  size_t error_at_ = 0;
  std::vector<std::string> strings_;
  std::vector<PValueType> types_;
  std::vector<PSample> samples_;
  std::vector<PMapping> mappings_;
  std::vector<PLocation> locations_;
  std::vector<PFunction> functions_;
  std::vector<int64_t> comments_;
  int64_t time_nanos_ = 0, duration_nanos_ = 0, default_type_ = 0;
};

}  // namespace

bool IsGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x1f &&
         static_cast<uint8_t>(bytes[1]) == 0x8b;
}

Status Gunzip(std::string_view gz, const std::string& name, uint64_t max_bytes, std::string* out) {
  out->clear();
  z_stream z{};
  // 15 + 32: a gzip or zlib header, told apart by zlib.
  if (inflateInit2(&z, 15 + 32) != Z_OK) return Status::Error(name + ": cannot start zlib");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  size_t in_left = gz.size();
  char buffer[1 << 16];
  int rc = Z_OK;
  bool over = false;
  do {
    if (z.avail_in == 0 && in_left > 0) {  // avail_in is 32-bit: larger inputs in pieces
      z.avail_in = static_cast<uInt>(std::min<size_t>(in_left, size_t{1} << 30));
      in_left -= z.avail_in;
    }
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) break;
    const size_t produced = sizeof buffer - z.avail_out;
    // Bounded by the cap, not by anything the stream says about its size.
    if (out->size() + produced > max_bytes) {
      over = true;
      break;
    }
    out->append(buffer, produced);
    if (rc == Z_BUF_ERROR && z.avail_in == 0 && in_left == 0) break;  // input ends early
  } while (rc != Z_STREAM_END);
  inflateEnd(&z);
  if (over) {
    out->clear();
    return Status::InvalidArgument(name + ": gzip: decompresses to more than " +
                                   std::to_string(max_bytes) +
                                   " bytes (the cap; INPROF_MAX_PROFILE_BYTES raises it)");
  }
  if (rc != Z_STREAM_END) {
    out->clear();
    return Status::InvalidArgument(
        name + ": gzip: " +
        (rc == Z_BUF_ERROR ? std::string("the compressed data ends early (a truncated file?)")
                           : std::string("corrupt compressed data")));
  }
  // What follows the first gzip member (padding, concatenated members) is not read.
  return Status::Ok();
}

bool LooksLikePprof(std::string_view bytes) {
  if (IsGzip(bytes)) return true;
  // An uncompressed profile.proto: every top-level field frames well (a cheap scan, no
  // nested decoding) and the string table's first entry, which must be there, is empty.
  // Text formats fail the framing within a few bytes.
  if (bytes.empty()) return false;
  WireReader r(bytes, 0);
  bool empty_first_string = false, seen_string = false;
  while (!r.done()) {
    WireField f;
    size_t at = 0;
    if (!r.Next(&f, &at) || f.number > 64) return false;
    if (f.number == field::kStringTable) {
      if (f.wire != 2) return false;
      if (!seen_string) empty_first_string = f.bytes.empty();
      seen_string = true;
    }
  }
  return empty_first_string;
}

Status ReadPprof(std::string_view bytes, const std::string& name, Profile* out,
                 uint64_t max_bytes) {
  std::string inflated;
  if (IsGzip(bytes)) {
    if (Status s = Gunzip(bytes, name, max_bytes, &inflated); !s.ok()) return s;
    bytes = inflated;
  }
  return PprofDecoder(name).Decode(bytes, out);
}

}  // namespace inprof
