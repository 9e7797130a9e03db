// Decoding follows https://protobuf.dev/programming-guides/encoding/ and profile.proto field
// numbers; it accepts packed and unpacked repeated scalars, as a real reader must.
#include "pprof_reader.h"

#include <zlib.h>

#include <sstream>
#include <stdexcept>

namespace inprof::test {
namespace {

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool done() const { return pos_ >= data_.size(); }
  bool Varint(uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return false;
      const uint8_t b = static_cast<uint8_t>(data_[pos_++]);
      *v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  // Next field: number, wire type, and its varint value or bytes.
  bool Field(uint32_t* number, uint32_t* wire, uint64_t* value, std::string_view* bytes) {
    uint64_t tag = 0;
    if (!Varint(&tag)) return false;
    *number = static_cast<uint32_t>(tag >> 3);
    *wire = static_cast<uint32_t>(tag & 7);
    if (*wire == 0) return Varint(value);
    if (*wire == 2) {
      uint64_t n = 0;
      if (!Varint(&n) || n > data_.size() - pos_) return false;
      *bytes = data_.substr(pos_, n);
      pos_ += n;
      return true;
    }
    return false;  // profile.proto uses no fixed-width fields
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// Calls `fn(number, value, bytes, is_bytes)` per field; false on malformed input.
template <typename Fn>
bool ForEachField(std::string_view data, Fn fn) {
  Reader r(data);
  while (!r.done()) {
    uint32_t number = 0, wire = 0;
    uint64_t value = 0;
    std::string_view bytes;
    if (!r.Field(&number, &wire, &value, &bytes)) return false;
    if (!fn(number, value, bytes, wire == 2)) return false;
  }
  return true;
}

// A repeated scalar: packed (bytes) or one value.
template <typename T>
bool Repeated(uint64_t value, std::string_view bytes, bool is_bytes, std::vector<T>* out) {
  if (!is_bytes) {
    out->push_back(static_cast<T>(value));
    return true;
  }
  Reader r(bytes);
  while (!r.done()) {
    uint64_t v = 0;
    if (!r.Varint(&v)) return false;
    out->push_back(static_cast<T>(v));
  }
  return true;
}

bool DecodeValueType(std::string_view b, PprofValueType* v) {
  return ForEachField(b, [&](uint32_t n, uint64_t value, std::string_view, bool) {
    if (n == 1) v->type = static_cast<int64_t>(value);
    if (n == 2) v->unit = static_cast<int64_t>(value);
    return true;
  });
}

}  // namespace

const std::string& PprofProfile::S(int64_t i) const { return strings.at(static_cast<size_t>(i)); }
const PprofLocation& PprofProfile::Location(uint64_t id) const {
  for (const auto& l : locations)
    if (l.id == id) return l;
  throw std::out_of_range("no location " + std::to_string(id));
}
const PprofFunction& PprofProfile::Function(uint64_t id) const {
  for (const auto& f : functions)
    if (f.id == id) return f;
  throw std::out_of_range("no function " + std::to_string(id));
}
const PprofMapping& PprofProfile::Mapping(uint64_t id) const {
  for (const auto& m : mappings)
    if (m.id == id) return m;
  throw std::out_of_range("no mapping " + std::to_string(id));
}

bool DecodePprof(std::string_view bytes, PprofProfile* p, std::string* error) {
  auto i64 = [](uint64_t v) { return static_cast<int64_t>(v); };
  const bool ok = ForEachField(bytes, [&](uint32_t n, uint64_t v, std::string_view b, bool is_b) {
    switch (n) {
      case 1:
        return DecodeValueType(b, &p->sample_types.emplace_back());
      case 2: {
        PprofSample& s = p->samples.emplace_back();
        return ForEachField(b, [&](uint32_t sn, uint64_t sv, std::string_view sb, bool sis) {
          if (sn == 1) return Repeated(sv, sb, sis, &s.location_ids);
          if (sn == 2) return Repeated(sv, sb, sis, &s.values);
          if (sn == 3) {
            PprofLabel& l = s.labels.emplace_back();
            return ForEachField(sb, [&](uint32_t ln, uint64_t lv, std::string_view, bool) {
              if (ln == 1) l.key = i64(lv);
              if (ln == 2) l.str = i64(lv);
              if (ln == 3) l.num = i64(lv);
              return true;
            });
          }
          return true;
        });
      }
      case 3: {
        PprofMapping& m = p->mappings.emplace_back();
        return ForEachField(b, [&](uint32_t mn, uint64_t mv, std::string_view, bool) {
          switch (mn) {
            case 1:
              m.id = mv;
              break;
            case 2:
              m.start = mv;
              break;
            case 3:
              m.limit = mv;
              break;
            case 4:
              m.offset = mv;
              break;
            case 5:
              m.filename = i64(mv);
              break;
            case 6:
              m.build_id = i64(mv);
              break;
            case 7:
              m.has_functions = mv != 0;
              break;
            case 8:
              m.has_filenames = mv != 0;
              break;
            case 9:
              m.has_line_numbers = mv != 0;
              break;
            case 10:
              m.has_inline_frames = mv != 0;
              break;
          }
          return true;
        });
      }
      case 4: {
        PprofLocation& l = p->locations.emplace_back();
        return ForEachField(b, [&](uint32_t ln, uint64_t lv, std::string_view lb, bool) {
          if (ln == 1) l.id = lv;
          if (ln == 2) l.mapping_id = lv;
          if (ln == 3) l.address = lv;
          if (ln == 4) {
            PprofLine& line = l.lines.emplace_back();
            return ForEachField(lb, [&](uint32_t n2, uint64_t v2, std::string_view, bool) {
              if (n2 == 1) line.function_id = v2;
              if (n2 == 2) line.line = i64(v2);
              if (n2 == 3) line.column = i64(v2);
              return true;
            });
          }
          return true;
        });
      }
      case 5: {
        PprofFunction& f = p->functions.emplace_back();
        return ForEachField(b, [&](uint32_t fn, uint64_t fv, std::string_view, bool) {
          if (fn == 1) f.id = fv;
          if (fn == 2) f.name = i64(fv);
          if (fn == 3) f.system_name = i64(fv);
          if (fn == 4) f.filename = i64(fv);
          if (fn == 5) f.start_line = i64(fv);
          return true;
        });
      }
      case 6:
        p->strings.emplace_back(b);
        return is_b;
      case 9:
        p->time_nanos = i64(v);
        return true;
      case 10:
        p->duration_nanos = i64(v);
        return true;
      case 11:
        return DecodeValueType(b, &p->period_type);
      case 12:
        p->period = i64(v);
        return true;
      case 13:
        return Repeated(v, b, is_b, &p->comments);
      case 14:
        p->default_sample_type = i64(v);
        return true;
      default:
        return true;
    }
  });
  if (!ok)
    *error = "malformed protobuf";
  else if (p->strings.empty() || !p->strings[0].empty()) {
    *error = "string_table[0] must be the empty string";
    return false;
  }
  return ok;
}

bool Gunzip(std::string_view gz, std::string* out, std::string* error) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return *error = "inflateInit2", false;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  char buffer[1 << 14];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    rc = inflate(&z, Z_NO_FLUSH);
    out->append(buffer, sizeof buffer - z.avail_out);
  }
  const bool trailing = z.avail_in != 0;
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return *error = "not a complete gzip stream", false;
  if (trailing) return *error = "data after the gzip stream", false;
  return true;
}

std::string DumpPprof(const PprofProfile& p) {
  std::ostringstream o;
  o << "sample_types:";
  for (const auto& t : p.sample_types) o << ' ' << p.S(t.type) << '/' << p.S(t.unit);
  o << "\nperiod: " << p.period << ' ' << p.S(p.period_type.type) << '/' << p.S(p.period_type.unit)
    << "\ndefault_sample_type: " << p.S(p.default_sample_type) << "\ntime_nanos: " << p.time_nanos
    << "\nduration_nanos: " << p.duration_nanos << '\n';
  for (int64_t c : p.comments) o << "comment: " << p.S(c) << '\n';
  for (const auto& m : p.mappings) {
    o << "mapping " << m.id << ": " << p.S(m.filename) << " [0x" << std::hex << m.start << ", 0x"
      << m.limit << ") offset 0x" << m.offset << std::dec << " build_id '" << p.S(m.build_id)
      << "' flags " << m.has_functions << m.has_filenames << m.has_line_numbers
      << m.has_inline_frames << '\n';
  }
  for (const auto& l : p.locations) {
    o << "location " << l.id << " mapping " << l.mapping_id << " address 0x" << std::hex
      << l.address << std::dec << ':';
    for (const auto& line : l.lines) {
      const PprofFunction& f = p.Function(line.function_id);
      o << " [" << p.S(f.name) << " | " << p.S(f.system_name) << " | " << p.S(f.filename) << ':'
        << line.line << ':' << line.column << ']';
    }
    o << '\n';
  }
  for (const auto& s : p.samples) {
    o << "sample";
    for (int64_t v : s.values) o << ' ' << v;
    for (const auto& l : s.labels) {
      o << " {" << p.S(l.key) << '=';
      if (l.str)
        o << p.S(l.str);
      else
        o << l.num;
      o << '}';
    }
    o << ':';
    for (uint64_t id : s.location_ids) o << ' ' << id;
    o << '\n';
  }
  return o.str();
}

}  // namespace inprof::test
