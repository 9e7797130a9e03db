// What a Grafana Pyroscope server reads of an /ingest request that carries a pprof form,
// written for the tests from the server's documented behaviour (docs/network.md, "What
// Pyroscope does with each part") and independently of the client: the multipart form as
// Go's mime/multipart reads it, the sample_type_config JSON, and the profile name (__name__)
// the server gives the request.
#ifndef INPROF_TESTS_SDK_PYROSCOPE_FORM_H_
#define INPROF_TESTS_SDK_PYROSCOPE_FORM_H_

#include <cctype>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "net_test_util.h"
#include "pprof_reader.h"

namespace inprof::test {

struct FormPart {
  std::string name;
  std::string filename;  // empty: the server's form reader keeps it as a text value, not a file
  std::string content_type;
  std::string data;
};

namespace form_detail {

inline std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

inline std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// "type/sub; a=b; c=\"d\"": the parameters, names lower-cased, quotes removed.
inline bool MediaParams(std::string_view header, std::string* type,
                        std::map<std::string, std::string>* params) {
  size_t semi = header.find(';');
  *type = Lower(TrimSpace(header.substr(0, semi)));
  while (semi != std::string_view::npos) {
    std::string_view rest = header.substr(semi + 1);
    size_t eq = rest.find('=');
    if (eq == std::string_view::npos) return false;
    std::string key = Lower(TrimSpace(rest.substr(0, eq)));
    rest = rest.substr(eq + 1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    std::string value;
    if (!rest.empty() && rest.front() == '"') {
      size_t i = 1;
      for (; i < rest.size() && rest[i] != '"'; ++i) {
        if (rest[i] == '\\' && i + 1 < rest.size()) ++i;
        value += rest[i];
      }
      if (i >= rest.size()) return false;  // unterminated quote
      rest = rest.substr(i + 1);
      semi = rest.find(';');
      if (!TrimSpace(rest.substr(0, semi)).empty()) return false;
      header = rest;
    } else {
      semi = rest.find(';');
      value = std::string(TrimSpace(rest.substr(0, semi)));
      header = rest;
    }
    if (key.empty() || params->count(key)) return false;
    (*params)[key] = value;
  }
  return !type->empty();
}

}  // namespace form_detail

// Parses a multipart/form-data body (RFC 2046/7578), the boundary taken from `content_type`.
// False with `error` set when the body is not one.
inline bool ParseMultipartForm(const std::string& content_type, const std::string& body,
                               std::vector<FormPart>* parts, std::string* error) {
  using namespace form_detail;
  std::string type;
  std::map<std::string, std::string> params;
  if (!MediaParams(content_type, &type, &params) || type != "multipart/form-data") {
    *error = "Content-Type is not multipart/form-data: " + content_type;
    return false;
  }
  const std::string boundary = params["boundary"];
  if (boundary.empty() || boundary.size() > 70) {
    *error = "no usable boundary in " + content_type;
    return false;
  }
  const std::string dash = "--" + boundary;
  // The first delimiter may open the body or follow a preamble line.
  size_t at = body.compare(0, dash.size(), dash) == 0 ? 0 : body.find("\r\n" + dash);
  if (at == std::string::npos) {
    *error = "no opening delimiter";
    return false;
  }
  at += at == 0 ? dash.size() : dash.size() + 2;
  for (;;) {
    if (body.compare(at, 2, "--") == 0) return true;  // the closing delimiter
    if (body.compare(at, 2, "\r\n") != 0) {
      *error = "a delimiter not followed by CRLF at " + std::to_string(at);
      return false;
    }
    at += 2;
    const size_t head_end = body.find("\r\n\r\n", at);
    const size_t next = body.find("\r\n" + dash, at);
    if (head_end == std::string::npos || next == std::string::npos || next < head_end) {
      *error = "a part without headers or without a delimiter after it";
      return false;
    }
    FormPart part;
    std::string_view head(body.data() + at, head_end - at);
    while (!head.empty()) {
      size_t eol = head.find("\r\n");
      std::string_view line = head.substr(0, eol);
      head = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2);
      size_t colon = line.find(':');
      if (colon == std::string_view::npos) {
        *error = "a part header without ':': " + std::string(line);
        return false;
      }
      const std::string name = Lower(TrimSpace(line.substr(0, colon)));
      const std::string_view value = TrimSpace(line.substr(colon + 1));
      if (name == "content-disposition") {
        std::string disposition;
        std::map<std::string, std::string> p;
        if (!MediaParams(value, &disposition, &p) || disposition != "form-data") {
          *error = "bad Content-Disposition: " + std::string(value);
          return false;
        }
        part.name = p["name"];
        part.filename = p["filename"];
      } else if (name == "content-type") {
        part.content_type = std::string(value);
      }
    }
    part.data = body.substr(head_end + 4, next - (head_end + 4));
    parts->push_back(std::move(part));
    at = next + 2 + dash.size();
  }
}

// One entry of sample_type_config, and which of its keys were present.
struct SampleTypeConfig {
  std::string units, display_name, aggregation;
  bool cumulative = false, sampled = false;
  std::set<std::string> keys;
};

namespace form_detail {

class Json {
 public:
  explicit Json(std::string_view s) : s_(s) {}
  void Space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Eat(char c) {
    Space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool Peek(char c) {
    Space();
    return i_ < s_.size() && s_[i_] == c;
  }
  bool Literal(std::string_view word) {
    Space();
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }
  bool String(std::string* out) {
    if (!Eat('"')) return false;
    out->clear();
    while (i_ < s_.size() && s_[i_] != '"') {
      const char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (i_ >= s_.size()) return false;
      const char e = s_[i_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          *out += e;
          break;
        case 'b':
          *out += '\b';
          break;
        case 'f':
          *out += '\f';
          break;
        case 'n':
          *out += '\n';
          break;
        case 'r':
          *out += '\r';
          break;
        case 't':
          *out += '\t';
          break;
        case 'u': {
          if (i_ + 4 > s_.size()) return false;
          const unsigned cp =
              static_cast<unsigned>(std::stoul(std::string(s_.substr(i_, 4)), nullptr, 16));
          i_ += 4;
          if (cp >= 0x80) return false;  // enough for these tests
          *out += static_cast<char>(cp);
          break;
        }
        default:
          return false;
      }
    }
    return Eat('"');
  }
  bool AtEnd() {
    Space();
    return i_ == s_.size();
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace form_detail

// Parses sample_type_config: {"type": {"units": "...", "display-name": "...", "aggregation":
// "...", "cumulative": bool, "sampled": bool}, ...}. Unknown keys are refused (the server
// would ignore them, so they could only be a spelling mistake); so are repeated types.
inline bool ParseSampleTypeConfig(const std::string& text,
                                  std::map<std::string, SampleTypeConfig>* out,
                                  std::string* error) {
  form_detail::Json j(text);
  *error = "sample_type_config is not the expected JSON: " + text;
  if (!j.Eat('{')) return false;
  bool first = true;
  while (!j.Peek('}')) {
    if (!first && !j.Eat(',')) return false;
    first = false;
    std::string type;
    if (!j.String(&type) || !j.Eat(':') || !j.Eat('{') || out->count(type)) return false;
    SampleTypeConfig c;
    bool first_key = true;
    while (!j.Peek('}')) {
      if (!first_key && !j.Eat(',')) return false;
      first_key = false;
      std::string key;
      if (!j.String(&key) || !j.Eat(':') || c.keys.count(key)) return false;
      c.keys.insert(key);
      if (key == "units" || key == "display-name" || key == "aggregation") {
        std::string value;
        if (!j.String(&value)) return false;
        (key == "units" ? c.units : key == "aggregation" ? c.aggregation : c.display_name) = value;
      } else if (key == "cumulative" || key == "sampled") {
        bool value = false;
        if (j.Literal("true")) {
          value = true;
        } else if (!j.Literal("false")) {
          return false;
        }
        (key == "cumulative" ? c.cumulative : c.sampled) = value;
      } else {
        return false;
      }
    }
    j.Eat('}');
    (*out)[type] = std::move(c);
  }
  j.Eat('}');
  if (!j.AtEnd()) return false;
  error->clear();
  return true;
}

// The profile name (__name__) Grafana Pyroscope gives a pprof pushed to /ingest with this
// config: "wall" if a sample type is called so; else, in sample type order, the first whose
// display-name (or name, without one) contains "cpu" -> process_cpu, "alloc_" or "inuse_" (or
// is "space"/"objects") -> memory, "mutex_" -> mutex, "block_" -> block, "goroutines" ->
// goroutines; else the last one's display-name or name.
inline std::string PyroscopeProfileName(const std::vector<std::string>& types,
                                        const std::map<std::string, SampleTypeConfig>& config) {
  for (const std::string& t : types) {
    if (t == "wall") return t;
  }
  std::string st;
  for (const std::string& t : types) {
    st = t;
    auto it = config.find(t);
    if (it != config.end() && !it->second.display_name.empty()) st = it->second.display_name;
    if (st.find("cpu") != std::string::npos) return "process_cpu";
    if (st.find("alloc_") != std::string::npos || st.find("inuse_") != std::string::npos ||
        st == "space" || st == "objects") {
      return "memory";
    }
    if (st.find("mutex_") != std::string::npos) return "mutex";
    if (st.find("block_") != std::string::npos) return "block";
    if (st.find("goroutines") != std::string::npos) return "goroutines";
  }
  return st;
}

// One push request as Pyroscope reads it: its query, the pprof of the `profile` file decoded,
// the `sample_type_config` file parsed, and the profile name the server gives the request.
struct PushedForm {
  std::map<std::string, std::string> query;
  PprofProfile pprof;
  std::vector<std::string> types;  // the pprof's sample types, in order
  std::map<std::string, std::string> units;
  std::map<std::string, SampleTypeConfig> config;
  std::string profile_name;
  std::map<std::string, int64_t> totals;  // per sample type
};

// Decodes `r`, checking (EXPECT) everything the server needs of it: POST /ingest without a
// format (the server would take the whole body for the pprof), a multipart/form-data body
// with the file fields `profile` (a gzipped pprof) and `sample_type_config` (JSON with one
// complete entry per sample type of that pprof, no more, in the units the server knows).
inline PushedForm DecodePushedForm(const Received& r) {
  PushedForm out;
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.target.substr(0, r.target.find('?')), "/ingest");
  out.query = DecodedQuery(r.target);
  EXPECT_EQ(out.query.count("format"), 0u) << r.target;
  std::vector<FormPart> parts;
  std::string error;
  const auto ct = r.headers.find("content-type");
  EXPECT_NE(ct, r.headers.end());
  if (ct == r.headers.end()) return out;
  EXPECT_TRUE(ParseMultipartForm(ct->second, r.body, &parts, &error)) << error;
  EXPECT_EQ(parts.size(), 2u);
  const FormPart* profile = nullptr;
  const FormPart* config = nullptr;
  for (const FormPart& part : parts) {
    EXPECT_FALSE(part.filename.empty()) << part.name << ": a file field, or the server skips it";
    if (part.name == "profile") {
      profile = &part;
      EXPECT_EQ(part.content_type, "application/octet-stream");
    } else if (part.name == "sample_type_config") {
      config = &part;
      EXPECT_EQ(part.content_type, "application/json");
    } else {
      ADD_FAILURE() << "unexpected form field " << part.name;
    }
  }
  EXPECT_TRUE(profile != nullptr && config != nullptr);
  if (profile == nullptr || config == nullptr) return out;
  std::string raw;
  EXPECT_TRUE(Gunzip(profile->data, &raw, &error)) << error;
  EXPECT_TRUE(DecodePprof(raw, &out.pprof, &error)) << error;
  EXPECT_TRUE(ParseSampleTypeConfig(config->data, &out.config, &error)) << error;
  for (size_t i = 0; i < out.pprof.sample_types.size(); ++i) {
    const std::string type = out.pprof.S(out.pprof.sample_types[i].type);
    out.types.push_back(type);
    out.units[type] = out.pprof.S(out.pprof.sample_types[i].unit);
    for (const PprofSample& s : out.pprof.samples) {
      if (i < s.values.size()) out.totals[type] += s.values[i];
    }
    auto it = out.config.find(type);
    EXPECT_NE(it, out.config.end())
        << "no sample_type_config entry for " << type << ": " << config->data;
    if (it == out.config.end()) continue;
    const SampleTypeConfig& c = it->second;
    for (const char* key : {"units", "aggregation", "cumulative", "sampled"}) {
      EXPECT_TRUE(c.keys.count(key)) << type << " has no " << key << ": " << config->data;
    }
    static const std::set<std::string> kUnits = {"samples",      "objects",          "bytes",
                                                 "lock_samples", "lock_nanoseconds", "goroutines"};
    EXPECT_TRUE(kUnits.count(c.units)) << type << ": " << c.units;
    EXPECT_TRUE(c.aggregation == "sum" || c.aggregation == "average") << type;
  }
  EXPECT_EQ(out.config.size(), out.types.size())
      << "an entry for a type the pprof lacks: " << config->data;
  out.profile_name = PyroscopeProfileName(out.types, out.config);
  return out;
}

}  // namespace inprof::test

#endif  // INPROF_TESTS_SDK_PYROSCOPE_FORM_H_
