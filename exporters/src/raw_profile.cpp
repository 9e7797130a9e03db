// The raw profile as text (docs/raw-profile.md): one record per line, fields separated by one
// space, strings escaped so that every field is one space-free token. The writer and the
// reader share the tables of field names, so what one writes the other reads.
//
// The reader is written for hostile input: it never allocates from a number it reads (the
// format has no counts: lists are as long as the lines that make them), every line is parsed
// in time linear in its length, and indices (Lua frames, label sets, stacks, events) and
// thread ids are checked before they are stored.
//
// Version 2 adds label sets and the timeline. The writer writes the lowest version that holds
// the profile: a profile without either is version 1, byte for byte what inprof wrote before
// version 2, so older readers still read it; one with either is version 2, which an older
// reader refuses at its header (naming the version) instead of at the first record it does
// not know.
#include "inprof/raw_profile.h"

#include "inprof/numbers.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

namespace inprof {
namespace {

constexpr std::string_view kMagic = "inprof-raw";
constexpr std::string_view kHeaders[] = {"inprof-raw 1", "inprof-raw 2"};  // by version - 1
constexpr int kVersion = 2;  // the newest this code reads and writes
// Thread ids, Lua frame indices and label set numbers live in the low 48 bits of a tagged
// address.
constexpr uint64_t kTagPayload = (uint64_t{1} << 48) - 1;
// The writer hands its text to the stream in pieces of about this size.
constexpr size_t kFlushBytes = 64 * 1024;

// ---------------------------------------------------------------------------------------------
// Field tables shared by the writer and the reader. Every field of Health and Metadata is
// here: one added to either belongs here too (and in docs/raw-profile.md).

using HealthMember = std::variant<std::string Health::*, double Health::*, uint64_t Health::*>;
struct HealthField {
  std::string_view name;
  HealthMember member;
};
const HealthField kHealthFields[] = {
    {"engine", &Health::engine},
    {"engine_reason", &Health::engine_reason},
    {"unwinder", &Health::unwinder},
    {"requested_hz", &Health::requested_hz},
    {"achieved_hz", &Health::achieved_hz},
    {"samples", &Health::samples},
    {"dropped", &Health::dropped},
    {"truncated", &Health::truncated},
    {"broken", &Health::broken},
    {"overflow", &Health::overflow},
    {"threads_seen", &Health::threads_seen},
    {"unknown_frames", &Health::unknown_frames},
    {"overruns", &Health::overruns},
    {"symbolize_seconds", &Health::symbolize_seconds},
    {"write_seconds", &Health::write_seconds},
    {"symbol_cache_hits", &Health::symbol_cache_hits},
    {"symbol_cache_misses", &Health::symbol_cache_misses},
};
constexpr size_t kHealthFieldCount = std::size(kHealthFields);
static_assert(kHealthFieldCount <= 32, "duplicate detection uses a 32-bit mask");

using MetaMember = std::variant<int64_t Metadata::*, std::string Metadata::*, int64_t RawProfile::*,
                                std::string RawProfile::*>;
struct MetaField {
  std::string_view name;
  MetaMember member;
};
const MetaField kMetaFields[] = {
    {"pid", &Metadata::pid},
    {"ppid", &RawProfile::ppid},
    {"comm", &RawProfile::comm},
    {"program", &Metadata::program},
    {"start_ns", &Metadata::start_time_ns},
    {"duration_ns", &Metadata::duration_ns},
};

// The member `member` names in `p` (of its Metadata or of the profile itself).
template <typename P, typename Member>
auto& Field(P& p, Member member) {
  if constexpr (std::is_same_v<Member, int64_t Metadata::*> ||
                std::is_same_v<Member, std::string Metadata::*>) {
    return p.meta.*member;
  } else {
    return p.*member;
  }
}

const std::string_view kModuleKinds[] = {"exe", "so", "vdso"};  // RawModule::Kind order
const char kFrameKinds[] = {'n', 'i', 's'};                     // FrameKind order

// The order records come in; a record never follows one of a later section. Lua frames,
// label sets and events come before the stacks that refer to them, and the stacks before the
// time records that refer to them, so every index is checked as it is read.
enum Section : int {
  kSectionHeader,
  kSectionMeta,
  kSectionEvent,
  kSectionHealth,
  kSectionThreadHealth,
  kSectionWarning,
  kSectionModule,
  kSectionLua,
  kSectionThread,
  kSectionLabels,  // version 2
  kSectionStack,
  kSectionTime,  // version 2
  kSectionEnd,
};

// ---------------------------------------------------------------------------------------------
// Writing

// The escapes of string fields: the byte, and the letter after '\\' that stands for it.
// Other control characters are written \xHH.
constexpr std::pair<char, char> kEscapes[] = {
    {'\\', '\\'}, {' ', 's'}, {'\t', 't'}, {'\n', 'n'}, {'\r', 'r'}};

void AppendString(std::string& out, std::string_view s) {
  if (s.empty() || s == "-") {
    out += s.empty() ? "-" : "\\x2d";  // "-" alone is the empty string
    return;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    const auto* e = std::find_if(std::begin(kEscapes), std::end(kEscapes),
                                 [c](const auto& escape) { return escape.first == c; });
    if (e != std::end(kEscapes)) {
      out += '\\';
      out += e->second;
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
}

template <typename T>
void AppendNumber(std::string& out, T value, int base = 10) {
  char buf[32];
  std::to_chars_result r;
  if constexpr (std::is_floating_point_v<T>) {
    r = std::to_chars(buf, buf + sizeof buf, value);  // shortest text that reads back exactly
  } else {
    r = std::to_chars(buf, buf + sizeof buf, value, base);
  }
  out.append(buf, r.ptr);
}

void AppendHex(std::string& out, uint64_t value) { AppendNumber(out, value, 16); }

void AppendAddress(std::string& out, uint64_t a) {
  if (a == kRawTruncated || a == kRawOverflow) {
    out += a == kRawTruncated ? 'T' : 'O';
  } else if (const uint64_t tag = a & kRawTagMask;
             tag == kRawThreadTag || tag == kRawLuaTag || tag == kRawLabelsTag) {
    out += tag == kRawThreadTag ? 't' : tag == kRawLuaTag ? 'L' : 'l';
    AppendNumber(out, a & kTagPayload);
  } else {
    AppendHex(out, a);
  }
}

// Field spellings for Record: a string is escaped, a Word is written as it is (keywords,
// kinds, flags), a Hex in hexadecimal, any other number in decimal.
struct Word {
  std::string_view text;
};
struct Hex {
  uint64_t value;
};
void AppendField(std::string& out, const std::string& s) { AppendString(out, s); }
void AppendField(std::string& out, Word w) { out += w.text; }
void AppendField(std::string& out, Hex h) { AppendHex(out, h.value); }
template <typename T>
requires std::is_arithmetic_v<T>
void AppendField(std::string& out, T value) { AppendNumber(out, value); }

// Writes lines into a buffer handed to the stream in pieces.
class LineWriter {
 public:
  explicit LineWriter(std::ostream& out) : out_(out) { text_.reserve(kFlushBytes + 4096); }
  ~LineWriter() { Flush(); }

  // One record: the keyword and its fields, separated by single spaces.
  template <typename... Fields>
  void Record(std::string_view keyword, const Fields&... fields) {
    text_ += keyword;
    ((text_ += ' ', AppendField(text_, fields)), ...);
    EndLine();
  }
  std::string& text() { return text_; }
  void EndLine() {
    text_ += '\n';
    if (text_.size() >= kFlushBytes) Flush();
  }

 private:
  void Flush() {
    out_.write(text_.data(), static_cast<std::streamsize>(text_.size()));
    text_.clear();
  }
  std::ostream& out_;
  std::string text_;
};

// ---------------------------------------------------------------------------------------------
// Reading

// A token quoted for an error message: escaped like a string field, and shortened.
std::string Quote(std::string_view token) {
  std::string out = "'";
  AppendString(out, token.substr(0, 48));
  if (token.size() > 48) out += "...";
  return out + "'";
}

bool ParseI64(std::string_view t, int64_t* v) {
  const auto r = std::from_chars(t.data(), t.data() + t.size(), *v);
  return !t.empty() && r.ec == std::errc() && r.ptr == t.data() + t.size();
}

bool ParseDouble(std::string_view t, double* v) {
  const auto r = std::from_chars(t.data(), t.data() + t.size(), *v);
  return !t.empty() && r.ec == std::errc() && r.ptr == t.data() + t.size();
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A string field: "-" is the empty string; otherwise bytes, with \\ \s \t \n \r \xHH escapes.
// Control characters must be escaped (a bare one is a damaged file, not a name).
Status ParseString(std::string_view t, std::string* out) {
  out->clear();
  if (t == "-") return Status::Ok();
  out->reserve(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      return Status::InvalidArgument("a control character in a string field (it must be escaped)");
    }
    if (c != '\\') {
      *out += c;
      continue;
    }
    if (++i == t.size()) {
      return Status::InvalidArgument("a string field ends in a lone '\\'");
    }
    const char letter = t[i];
    const auto* e = std::find_if(std::begin(kEscapes), std::end(kEscapes),
                                 [letter](const auto& escape) { return escape.second == letter; });
    if (e != std::end(kEscapes)) {
      *out += e->first;
    } else if (letter == 'x') {
      const int hi = i + 1 < t.size() ? HexDigit(t[i + 1]) : -1;
      const int lo = i + 2 < t.size() ? HexDigit(t[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return Status::InvalidArgument("'\\x' not followed by two hex digits");
      }
      *out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      return Status::InvalidArgument(std::string("unknown escape '\\") + letter +
                                     "' (known: \\\\ \\s \\t \\n \\r \\xHH)");
    }
  }
  return Status::Ok();
}

class Reader {
 public:
  Reader(const std::string& source, RawProfile* out) : source_(source), p_(*out) {}

  // One complete line (its '\n' was read). False with error() set when it is malformed.
  bool Line(std::string_view line, size_t number) {
    number_ = number;
    if (number == 1) {
      return HeaderLine(line);
    }
    if (section_ == kSectionEnd) return Fail("text after the 'end' line");
    if (!Split(line)) return false;
    const std::string_view keyword = fields_[0];
    if (keyword == "time") return Enter(kSectionTime) && TimeLine();
    if (keyword == "stack") return Enter(kSectionStack) && StackLine();
    if (keyword == "labels") return Enter(kSectionLabels) && LabelsLine();
    if (keyword == "segment") return Enter(kSectionModule) && SegmentLine();
    if (keyword == "lua") return Enter(kSectionLua) && LuaLine();
    if (keyword == "thread") return Enter(kSectionThread) && ThreadLine();
    if (keyword == "module") return Enter(kSectionModule) && ModuleLine();
    if (keyword == "meta") return Enter(kSectionMeta) && MetaLine();
    if (keyword == "event") return Enter(kSectionEvent) && EventLine();
    if (keyword == "health") return Enter(kSectionHealth) && HealthLine();
    if (keyword == "thread_health") return Enter(kSectionThreadHealth) && ThreadHealthLine();
    if (keyword == "warning") return Enter(kSectionWarning) && WarningLine();
    if (keyword == "end") {
      if (!Fields(1)) return false;
      section_ = kSectionEnd;
      return true;
    }
    return Fail("unknown record " + Quote(keyword) +
                " (expected meta, event, health, thread_health, warning, module, segment, lua, "
                "thread, labels, stack, time or end)");
  }

  // The last line of the input, cut before its '\n': what a write cut short leaves. Ignored,
  // except that a first line must still be the start of the header.
  bool CutLine(std::string_view line, size_t number) {
    number_ = number;
    if (number == 1 && std::none_of(std::begin(kHeaders), std::end(kHeaders),
                                    [line](std::string_view h) { return h.starts_with(line); })) {
      return NotRawProfile();
    }
    return true;
  }

  bool ended() const { return section_ == kSectionEnd; }
  const std::string& error() const { return error_; }

 private:
  bool Fail(const std::string& what) {
    error_ = source_ + ":" + std::to_string(number_) + ": " + what;
    return false;
  }

  bool HeaderLine(std::string_view line) {
    for (int v = 1; v <= kVersion; ++v) {
      if (line == kHeaders[v - 1]) {
        version_ = v;
        return true;
      }
    }
    int64_t version = 0;
    if (line.starts_with(kMagic) && line.size() > kMagic.size() + 1 && line[kMagic.size()] == ' ' &&
        ParseI64(line.substr(kMagic.size() + 1), &version)) {
      return Fail("raw profile version " + std::to_string(version) +
                  ", this reader knows versions 1 to " + std::to_string(kVersion) +
                  (version > kVersion ? " (a newer inprof wrote it)" : ""));
    }
    return NotRawProfile();
  }

  bool NotRawProfile() {
    return Fail("not a raw profile (the first line is not 'inprof-raw 1' to 'inprof-raw " +
                std::to_string(kVersion) + "')");
  }

  // Records and stack tokens version 1 does not have are errors in a version 1 file: what
  // reads as version 1 is what an older reader reads too.
  bool Needs2(std::string_view what) {
    if (version_ >= 2) return true;
    return Fail(std::string(what) + " needs format version 2 (the header says 'inprof-raw 1')");
  }

  // Splits on single spaces; an empty field (two spaces, a space at either end) is an error.
  bool Split(std::string_view line) {
    fields_.clear();
    if (line.empty()) return Fail("empty line");
    size_t start = 0;
    while (true) {
      const size_t space = line.find(' ', start);
      const std::string_view field = line.substr(start, space - start);
      if (field.empty()) return Fail("empty field (two spaces, or a space at either end)");
      fields_.push_back(field);
      if (space == std::string_view::npos) return true;
      start = space + 1;
    }
  }

  bool Enter(Section section) {
    if (section < section_) {
      return Fail("'" + std::string(fields_[0]) +
                  "' after a later section (the order is meta, event, health, thread_health, "
                  "warning, module, lua, thread, labels, stack, time, end)");
    }
    section_ = section;
    return true;
  }

  bool Fields(size_t n) {
    if (fields_.size() == n) return true;
    return Fail("'" + std::string(fields_[0]) + "' takes " + std::to_string(n - 1) +
                " fields, found " + std::to_string(fields_.size() - 1));
  }

  bool String(size_t i, const char* what, std::string* out) {
    const Status s = ParseString(fields_[i], out);
    if (s.ok()) return true;
    return Fail(std::string(what) + ": " + s.message());
  }
  bool I64(size_t i, const char* what, int64_t* out) {
    if (ParseI64(fields_[i], out)) return true;
    return Fail(std::string(what) + ": " + Quote(fields_[i]) + " is not a decimal integer");
  }
  bool U64(size_t i, const char* what, uint64_t* out) {
    if (ParseUnsigned(fields_[i], out)) return true;
    return Fail(std::string(what) + ": " + Quote(fields_[i]) +
                " is not a non-negative decimal integer");
  }
  bool U32(size_t i, const char* what, uint32_t* out) {
    if (ParseUnsigned(fields_[i], out)) return true;
    return Fail(std::string(what) + ": " + Quote(fields_[i]) +
                " is not a decimal integer below 2^32");
  }
  bool Hex(size_t i, const char* what, uint64_t* out) {
    if (ParseUnsigned(fields_[i], out, 16)) return true;
    return Fail(std::string(what) + ": " + Quote(fields_[i]) + " is not a 64-bit hex number");
  }
  bool Double(size_t i, const char* what, double* out) {
    if (ParseDouble(fields_[i], out)) return true;
    return Fail(std::string(what) + ": " + Quote(fields_[i]) + " is not a number");
  }
  // A thread id: what a tagged address can carry, and never 0 (no thread has it).
  bool Tid(size_t i, const char* what, int64_t* out) {
    if (!I64(i, what, out)) return false;
    if (*out > 0 && static_cast<uint64_t>(*out) <= kTagPayload) return true;
    return Fail(std::string(what) + ": " + Quote(fields_[i]) + " is not a thread id (1 to 2^48-1)");
  }

  bool MetaLine() {
    if (!Fields(3)) return false;
    size_t key = 0;
    while (key < std::size(kMetaFields) && kMetaFields[key].name != fields_[1]) ++key;
    if (key == std::size(kMetaFields)) {
      return Fail("unknown meta field " + Quote(fields_[1]) +
                  " (expected pid, ppid, comm, program, start_ns or duration_ns)");
    }
    if (meta_seen_ & (1u << key)) return Fail("meta " + std::string(fields_[1]) + " given twice");
    meta_seen_ |= 1u << key;
    return std::visit(
        [&](auto member) -> bool {
          auto& field = Field(p_, member);
          if constexpr (std::is_same_v<std::decay_t<decltype(field)>, std::string>) {
            return String(2, kMetaFields[key].name.data(), &field);
          } else {
            return I64(2, kMetaFields[key].name.data(), &field);
          }
        },
        kMetaFields[key].member);
  }

  bool EventLine() {
    if (!Fields(6)) return false;
    EventInfo e;
    if (!String(1, "event name", &e.name) || !String(2, "event unit", &e.unit) ||
        !U64(3, "event period", &e.period) || !Double(4, "event frequency", &e.frequency_hz) ||
        !I64(5, "event total", &e.total_weight)) {
      return false;
    }
    p_.events.push_back(std::move(e));
    return true;
  }

  bool HealthLine() {
    if (!Fields(3)) return false;
    size_t key = 0;
    while (key < kHealthFieldCount && kHealthFields[key].name != fields_[1]) ++key;
    if (key == kHealthFieldCount) return Fail("unknown health field " + Quote(fields_[1]));
    if (health_seen_ & (uint32_t{1} << key)) {
      return Fail("health " + std::string(fields_[1]) + " given twice");
    }
    health_seen_ |= uint32_t{1} << key;
    const char* name = kHealthFields[key].name.data();
    return std::visit(
        [&](auto member) -> bool {
          auto* field = &(p_.health.*member);
          using T = std::remove_pointer_t<decltype(field)>;
          if constexpr (std::is_same_v<T, std::string>) {
            return String(2, name, field);
          } else if constexpr (std::is_same_v<T, double>) {
            return Double(2, name, field);
          } else {
            return U64(2, name, field);
          }
        },
        kHealthFields[key].member);
  }

  bool ThreadHealthLine() {
    if (!Fields(7)) return false;
    ThreadHealth t;
    if (!Tid(1, "thread_health tid", &t.tid) || !String(2, "thread_health name", &t.name) ||
        !Double(3, "thread_health cpu_seconds", &t.cpu_seconds) ||
        !Double(4, "thread_health expected", &t.expected) ||
        !U64(5, "thread_health taken", &t.taken) || !U64(6, "thread_health weight", &t.weight)) {
      return false;
    }
    p_.health.threads.push_back(std::move(t));
    return true;
  }

  bool WarningLine() {
    if (!Fields(2)) return false;
    std::string text;
    if (!String(1, "warning", &text)) return false;
    p_.health.warnings.push_back(std::move(text));
    return true;
  }

  bool ModuleLine() {
    if (!Fields(5)) return false;
    RawModule m;
    size_t kind = 0;
    while (kind < 3 && kModuleKinds[kind] != fields_[1]) ++kind;
    if (kind == 3) return Fail("module kind " + Quote(fields_[1]) + " (expected exe, so or vdso)");
    m.kind = static_cast<RawModule::Kind>(kind);
    if (!Hex(2, "module bias", &m.bias) || !String(3, "module build-id", &m.build_id) ||
        !String(4, "module path", &m.path)) {
      return false;
    }
    if (m.build_id.size() % 2 != 0 ||
        m.build_id.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return Fail("module build-id " + Quote(fields_[3]) + " is not lower-case hex bytes");
    }
    if (m.path.empty()) return Fail("module without a path");
    p_.modules.push_back(std::move(m));
    return true;
  }

  bool SegmentLine() {
    if (!Fields(5)) return false;
    if (p_.modules.empty()) return Fail("'segment' before any 'module'");
    RawSegment s;
    if (!Hex(1, "segment begin", &s.begin) || !Hex(2, "segment end", &s.end) ||
        !Hex(3, "segment file offset", &s.file_offset)) {
      return false;
    }
    if (s.end < s.begin) return Fail("segment ends before it begins");
    if (fields_[4] != "x" && fields_[4] != "-") {
      return Fail("segment flag " + Quote(fields_[4]) + " (expected x for executable, or -)");
    }
    s.executable = fields_[4] == "x";
    p_.modules.back().segments.push_back(s);
    return true;
  }

  bool LuaLine() {
    if (!Fields(8)) return false;
    Frame f;
    const std::string_view kind = fields_[1];
    size_t k = 0;
    while (k < 3 && !(kind.size() == 1 && kind[0] == kFrameKinds[k])) ++k;
    if (k == 3) return Fail("lua frame kind " + Quote(kind) + " (expected n, i or s)");
    f.kind = static_cast<FrameKind>(k);
    if (!U32(2, "lua line", &f.line) || !U32(3, "lua column", &f.column) ||
        !Hex(4, "lua address", &f.address) || !String(5, "lua function", &f.function) ||
        !String(6, "lua file", &f.file) || !String(7, "lua module", &f.module)) {
      return false;
    }
    p_.lua_frames.push_back(std::move(f));
    return true;
  }

  bool ThreadLine() {
    if (!Fields(3)) return false;
    RawThread t;
    if (!Tid(1, "thread tid", &t.tid) || !String(2, "thread name", &t.name)) return false;
    if (!tids_.insert(t.tid).second)
      return Fail("thread " + std::to_string(t.tid) + " given twice");
    p_.threads.push_back(std::move(t));
    return true;
  }

  // labels KEY VALUE KEY VALUE ...: one label set, keys in strictly increasing byte order
  // (sorted, unique: the model's invariant, which lookups by key rely on).
  bool LabelsLine() {
    if (!Needs2("'labels'")) return false;
    if (fields_.size() % 2 != 1) {
      return Fail("'labels' takes key value pairs, found " + std::to_string(fields_.size() - 1) +
                  " fields");
    }
    std::vector<Label> set;
    set.reserve((fields_.size() - 1) / 2);
    for (size_t i = 1; i < fields_.size(); i += 2) {
      Label label;
      if (!String(i, "label key", &label.key) || !String(i + 1, "label value", &label.value)) {
        return false;
      }
      if (!set.empty() && !(set.back().key < label.key)) {
        return Fail("label key " + Quote(label.key) + " after " + Quote(set.back().key) +
                    " (keys come sorted, each once)");
      }
      set.push_back(std::move(label));
    }
    p_.label_sets.push_back(std::move(set));
    return true;
  }

  bool StackLine() {
    if (fields_.size() < 2) return Fail("'stack' without its weights");
    RawStack s;
    // Weights: one per event, comma-separated; "-" when the profile has no events.
    const std::string_view weights = fields_[1];
    bool extra = false;
    if (weights != "-") {
      size_t start = 0;
      while (true) {
        const size_t comma = weights.find(',', start);
        const std::string_view w = weights.substr(start, comma - start);
        int64_t value = 0;
        if (!ParseI64(w, &value)) {
          return Fail("stack weight " + Quote(w) + " is not a decimal integer");
        }
        // Counted as they come: a line of a million weights is refused at the first extra one.
        if (s.weights.size() == p_.events.size()) {
          extra = true;
          break;
        }
        s.weights.push_back(value);
        if (comma == std::string_view::npos) break;
        start = comma + 1;
      }
    }
    if (extra || s.weights.size() != p_.events.size() || (weights == "-") != p_.events.empty()) {
      return Fail(
          "stack weights " + Quote(weights) + ": the profile has " +
          std::to_string(p_.events.size()) + " events, so " +
          (p_.events.empty() ? std::string("'-'") : std::to_string(p_.events.size()) + " weights") +
          " are expected");
    }
    s.addresses.reserve(fields_.size() - 2);
    for (size_t i = 2; i < fields_.size(); ++i) {
      uint64_t a = 0;
      if (!Address(fields_[i], &a)) return false;
      s.addresses.push_back(a);
    }
    p_.stacks.push_back(std::move(s));
    return true;
  }

  // time DT STACK [EVENT WEIGHT]: DT is the time since the previous time record (since the
  // start for the first, and only that one may be negative), so records come in time order;
  // without EVENT and WEIGHT they are the previous record's (event 0, weight 1 at first).
  bool TimeLine() {
    if (!Needs2("'time'")) return false;
    if (fields_.size() != 3 && fields_.size() != 5) {
      return Fail("'time' takes 2 or 4 fields (DT STACK [EVENT WEIGHT]), found " +
                  std::to_string(fields_.size() - 1));
    }
    TimedSample t;
    if (p_.timeline.empty()) {
      if (!I64(1, "time since the start", &t.time_ns)) return false;
    } else {
      uint64_t delta = 0;
      if (!ParseUnsigned(fields_[1], &delta)) {
        return Fail("time since the previous record: " + Quote(fields_[1]) +
                    " is not a non-negative decimal integer (records come in time order)");
      }
      const int64_t last = p_.timeline.back().time_ns;
      // INT64_MAX - last, exact in unsigned arithmetic whatever last's sign.
      const uint64_t room = static_cast<uint64_t>(INT64_MAX) - static_cast<uint64_t>(last);
      if (delta > room) return Fail("time past 2^63 ns");
      t.time_ns = static_cast<int64_t>(static_cast<uint64_t>(last) + delta);
    }
    if (!U32(2, "time stack", &t.sample)) return false;
    if (t.sample >= p_.stacks.size()) {
      return Fail("time stack " + std::to_string(t.sample) + ": the profile has " +
                  std::to_string(p_.stacks.size()) + " stacks");
    }
    if (fields_.size() == 5) {
      if (!U32(3, "time event", &t.event) || !I64(4, "time weight", &t.weight)) return false;
    } else if (!p_.timeline.empty()) {
      t.event = p_.timeline.back().event;
      t.weight = p_.timeline.back().weight;
    } else {
      t.weight = 1;
    }
    if (t.event >= p_.events.size()) {
      return Fail("time event " + std::to_string(t.event) + ": the profile has " +
                  std::to_string(p_.events.size()) + " events");
    }
    p_.timeline.push_back(t);
    return true;
  }

  bool Address(std::string_view t, uint64_t* a) {
    if (t == "T") {
      *a = kRawTruncated;
      return true;
    }
    if (t == "O") {
      *a = kRawOverflow;
      return true;
    }
    if (t[0] == 't' || t[0] == 'L' || t[0] == 'l') {
      uint64_t payload = 0;
      if (!ParseUnsigned(t.substr(1), &payload)) {
        return Fail("stack frame " + Quote(t) + ": not a decimal number after '" + t[0] + "'");
      }
      if (t[0] == 'l') {
        if (!Needs2("a labels tag (l<set>)")) return false;
        if (payload == 0 || payload > p_.label_sets.size()) {
          return Fail("stack frame " + Quote(t) +
                      ": label sets count from 1, and the profile has " +
                      std::to_string(p_.label_sets.size()));
        }
        *a = kRawLabelsTag | payload;
      } else if (t[0] == 't') {
        if (payload == 0 || payload > kTagPayload) {
          return Fail("stack frame " + Quote(t) + " is not a thread id (1 to 2^48-1)");
        }
        *a = kRawThreadTag | payload;
      } else {
        if (payload >= p_.lua_frames.size()) {
          return Fail("stack frame " + Quote(t) + ": the profile has " +
                      std::to_string(p_.lua_frames.size()) + " Lua frames");
        }
        *a = kRawLuaTag | payload;
      }
      return true;
    }
    if (!ParseUnsigned(t, a, 16)) {
      return Fail("stack frame " + Quote(t) +
                  " (expected a hex address, T, O, t<tid>, L<lua frame> or l<label set>)");
    }
    // Values that mean something else are written as what they mean; a hex spelling of one
    // is a damaged or hand-edited file.
    const uint64_t tag = *a & kRawTagMask;
    if (*a == kRawTruncated || *a == kRawOverflow || tag == kRawThreadTag || tag == kRawLuaTag ||
        tag == kRawLabelsTag) {
      return Fail("stack frame " + Quote(t) + " is a marker written as an address");
    }
    return true;
  }

  const std::string& source_;
  RawProfile& p_;
  size_t number_ = 0;
  Section section_ = kSectionHeader;
  int version_ = 0;
  uint32_t meta_seen_ = 0;
  uint32_t health_seen_ = 0;
  std::unordered_set<int64_t> tids_;
  std::vector<std::string_view> fields_;
  std::string error_;
};

// The time records. The format keeps them in time order (their times are deltas that may not
// be negative); the runtime drains threads one after another, so a timeline that is not in
// order is written stably sorted rather than as a file its reader would refuse. Timed samples
// that name no stack or event are left out for the same reason.
void WriteTimeline(const RawProfile& p, LineWriter& w) {
  const auto earlier = [](const TimedSample& a, const TimedSample& b) {
    return a.time_ns < b.time_ns;
  };
  std::vector<const TimedSample*> sorted;
  if (!std::is_sorted(p.timeline.begin(), p.timeline.end(), earlier)) {
    sorted.reserve(p.timeline.size());
    for (const TimedSample& t : p.timeline) sorted.push_back(&t);
    std::stable_sort(sorted.begin(), sorted.end(),
                     [&](const TimedSample* a, const TimedSample* b) { return earlier(*a, *b); });
  }
  bool first = true;
  TimedSample last;  // what a short record repeats: event 0, weight 1 before the first
  last.weight = 1;
  const auto write = [&](const TimedSample& t) {
    if (t.sample >= p.stacks.size() || t.event >= p.events.size()) return;
    std::string& text = w.text();
    text += "time ";
    if (first) {
      AppendNumber(text, t.time_ns);
    } else {
      // Exact for any two int64 values in order, however far apart.
      AppendNumber(text, static_cast<uint64_t>(t.time_ns) - static_cast<uint64_t>(last.time_ns));
    }
    text += ' ';
    AppendNumber(text, t.sample);
    if (t.event != last.event || t.weight != last.weight) {
      text += ' ';
      AppendNumber(text, t.event);
      text += ' ';
      AppendNumber(text, t.weight);
    }
    w.EndLine();
    first = false;
    last = t;
  };
  if (sorted.empty()) {
    for (const TimedSample& t : p.timeline) write(t);
  } else {
    for (const TimedSample* t : sorted) write(*t);
  }
}

}  // namespace

void WriteRawProfile(const RawProfile& p, std::ostream& out) {
  LineWriter w(out);
  w.Record(kHeaders[p.label_sets.empty() && p.timeline.empty() ? 0 : 1]);
  for (const MetaField& field : kMetaFields) {
    std::visit([&](auto member) { w.Record("meta", Word{field.name}, Field(p, member)); },
               field.member);
  }
  for (const EventInfo& e : p.events) {
    w.Record("event", e.name, e.unit, e.period, e.frequency_hz, e.total_weight);
  }
  for (const HealthField& field : kHealthFields) {
    std::visit([&](auto member) { w.Record("health", Word{field.name}, p.health.*member); },
               field.member);
  }
  for (const ThreadHealth& t : p.health.threads) {
    w.Record("thread_health", t.tid, t.name, t.cpu_seconds, t.expected, t.taken, t.weight);
  }
  for (const std::string& warning : p.health.warnings) w.Record("warning", warning);
  for (const RawModule& m : p.modules) {
    const auto kind = static_cast<size_t>(m.kind);
    w.Record("module", Word{kModuleKinds[kind < 3 ? kind : 1]}, Hex{m.bias}, m.build_id, m.path);
    for (const RawSegment& s : m.segments) {
      w.Record("segment", Hex{s.begin}, Hex{s.end}, Hex{s.file_offset},
               Word{s.executable ? "x" : "-"});
    }
  }
  for (const Frame& f : p.lua_frames) {
    const auto kind = static_cast<size_t>(f.kind);
    w.Record("lua", Word{std::string_view(&kFrameKinds[kind < 3 ? kind : 0], 1)}, f.line, f.column,
             Hex{f.address}, f.function, f.file, f.module);
  }
  for (const RawThread& t : p.threads) w.Record("thread", t.tid, t.name);
  for (const std::vector<Label>& set : p.label_sets) {
    std::string& text = w.text();
    text += "labels";
    for (const Label& label : set) {
      text += ' ';
      AppendString(text, label.key);
      text += ' ';
      AppendString(text, label.value);
    }
    w.EndLine();
  }
  for (const RawStack& s : p.stacks) {
    std::string& text = w.text();
    text += "stack ";
    if (s.weights.empty()) text += '-';
    for (size_t i = 0; i < s.weights.size(); ++i) {
      if (i != 0) text += ',';
      AppendNumber(text, s.weights[i]);
    }
    for (uint64_t a : s.addresses) {
      text += ' ';
      AppendAddress(text, a);
    }
    w.EndLine();
  }
  WriteTimeline(p, w);
  w.Record("end");
}

Status ReadRawProfile(std::istream& in, const std::string& source, RawProfile* profile) {
  RawProfile result;
  Reader reader(source, &result);
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (in.eof()) {
      // getline met the end before a '\n': the write stopped inside this line.
      if (!reader.CutLine(line, number)) return Status::InvalidArgument(reader.error());
      break;
    }
    if (!reader.Line(line, number)) return Status::InvalidArgument(reader.error());
  }
  if (in.bad()) {
    return Status::Io(source + ":" + std::to_string(number + 1) + ": read error");
  }
  result.complete = reader.ended();
  *profile = std::move(result);
  return Status::Ok();
}

}  // namespace inprof
