#include "inprof/json.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <string>

namespace inprof::internal {
namespace {

// Length of the valid UTF-8 sequence at the start of `s`, or 0 when it is not one.
size_t Utf8SequenceLength(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  size_t n = 0;
  uint32_t cp = 0;
  if (b0 < 0x80) return 1;
  if ((b0 & 0xe0) == 0xc0) {
    n = 2;
    cp = b0 & 0x1f;
  } else if ((b0 & 0xf0) == 0xe0) {
    n = 3;
    cp = b0 & 0x0f;
  } else if ((b0 & 0xf8) == 0xf0) {
    n = 4;
    cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if ((b & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3f);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not valid UTF-8.
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

// Appends the character `rest` starts with (U+FFFD for a byte that starts no valid UTF-8
// sequence) and returns how many bytes of `rest` it took.
size_t AppendUtf8Character(std::string& out, std::string_view rest) {
  const size_t n = static_cast<unsigned char>(rest[0]) < 0x80 ? 1 : Utf8SequenceLength(rest);
  if (n == 0) {
    out += "\xef\xbf\xbd";
    return 1;
  }
  out.append(rest.substr(0, n));
  return n;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t n = Utf8SequenceLength(text.substr(i));
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string RepairUtf8(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) i += AppendUtf8Character(out, text.substr(i));
  return out;
}

void AppendJsonString(std::string& out, std::string_view text) {
  out += '"';
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else if (c >= 0x80) {
      i += AppendUtf8Character(out, text.substr(i));
      continue;
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  out += '"';
}

void AppendJsonNumber(std::string& out, int64_t value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

void AppendJsonNumber(std::string& out, double value) {
  if (!std::isfinite(value)) value = 0;
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

size_t JsonCursor::LineAt(size_t pos) const {
  size_t line = 1;
  for (size_t i = 0; i < pos && i < text_.size(); ++i) line += text_[i] == '\n';
  return line;
}

bool JsonCursor::Fail(std::string expected) {
  if (error_.empty()) {
    error_ = std::move(expected);
    error_line_ = LineAt(pos_);
  }
  return false;
}

bool JsonCursor::FailAt(size_t position, std::string expected) {
  if (error_.empty()) {
    error_ = std::move(expected);
    error_line_ = LineAt(position);
  }
  return false;
}

bool JsonCursor::AtEnd() {
  SkipSpace();
  return pos_ == text_.size();
}

bool JsonCursor::Begin(char open, const char* expected) {
  if (!Consume(open)) return Fail(expected);
  // Bounded so that a hostile file cannot exhaust the stack of a recursive caller (Skip).
  if (++depth_ > 64) return Fail("expected at most 64 levels of nesting");
  first_ = true;
  return true;
}

bool JsonCursor::NextKey(std::string_view* key, bool* done) {
  *done = false;
  SkipSpace();
  if (pos_ < text_.size() && text_[pos_] == '}') {
    ++pos_;
    --depth_;
    first_ = false;
    *done = true;
    return true;
  }
  if (!first_ && !Consume(',')) return Fail("expected ',' or '}' after an object member");
  first_ = false;
  if (!Consume('"')) return Fail("expected a string");
  if (!StringBody(key, &key_scratch_)) return false;
  if (!Consume(':')) return Fail("expected ':' after an object key");
  return true;
}

bool JsonCursor::NextKey(std::string* key, bool* done) {
  std::string_view view;
  if (!NextKey(&view, done)) return false;
  if (!*done) key->assign(view);
  return true;
}

bool JsonCursor::ReadString(std::string* value) {
  if (!Consume('"')) return Fail("expected a string");
  std::string_view view;
  const size_t start = pos_;
  if (!StringBody(&view, value)) return false;
  // StringBody decoded into *value when the string had escapes; otherwise copy it once.
  if (view.data() == text_.data() + start) value->assign(view);
  return true;
}

bool JsonCursor::StringBody(std::string_view* value, std::string* scratch) {
  const size_t start = pos_;
  const char* p = text_.data() + pos_;
  const char* end = text_.data() + text_.size();
  while (p < end && *p != '"' && *p != '\\' && static_cast<unsigned char>(*p) >= 0x20) ++p;
  pos_ = static_cast<size_t>(p - text_.data());
  if (p < end && *p == '"') {
    ++pos_;
    *value = text_.substr(start, pos_ - 1 - start);
    return true;
  }
  if (!DecodeEscapes(start, scratch)) return false;
  *value = *scratch;
  return true;
}

bool JsonCursor::DecodeEscapes(size_t start, std::string* value) {
  value->assign(text_.substr(start, pos_ - start));
  while (true) {
    const size_t run = pos_;
    while (pos_ < text_.size() && text_[pos_] != '"' && text_[pos_] != '\\' &&
           static_cast<unsigned char>(text_[pos_]) >= 0x20) {
      ++pos_;
    }
    value->append(text_.substr(run, pos_ - run));
    if (pos_ >= text_.size()) return Fail("expected '\"' to end the string");
    const char c = text_[pos_++];
    if (c == '"') return true;
    if (c != '\\') {
      --pos_;
      return Fail("expected no raw control character in a string");
    }
    if (pos_ >= text_.size()) return Fail("expected an escape after '\\'");
    const char e = text_[pos_++];
    switch (e) {
      case '"': *value += '"'; break;
      case '\\': *value += '\\'; break;
      case '/': *value += '/'; break;
      case 'b': *value += '\b'; break;
      case 'f': *value += '\f'; break;
      case 'n': *value += '\n'; break;
      case 'r': *value += '\r'; break;
      case 't': *value += '\t'; break;
      case 'u': {
        auto hex4 = [&](uint32_t* out) {
          if (pos_ + 4 > text_.size()) return false;
          uint32_t v = 0;
          for (size_t i = 0; i < 4; ++i) {
            const char h = text_[pos_ + i];
            const int d = h >= '0' && h <= '9'   ? h - '0'
                          : h >= 'a' && h <= 'f' ? h - 'a' + 10
                          : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                                 : -1;
            if (d < 0) return false;
            v = v << 4 | static_cast<uint32_t>(d);
          }
          *out = v;
          pos_ += 4;
          return true;
        };
        uint32_t cp = 0;
        if (!hex4(&cp)) return Fail("expected four hex digits after '\\u'");
        if (cp >= 0xd800 && cp <= 0xdbff && text_.substr(pos_, 2) == "\\u") {
          pos_ += 2;
          uint32_t low = 0;
          if (!hex4(&low)) return Fail("expected four hex digits after '\\u'");
          cp = (low >= 0xdc00 && low <= 0xdfff) ? 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00)
                                                 : 0xfffd;
        } else if (cp >= 0xd800 && cp <= 0xdfff) {
          cp = 0xfffd;
        }
        AppendUtf8(*value, cp);
        break;
      }
      default:
        --pos_;
        return Fail("expected a valid escape sequence");
    }
  }
}

bool JsonCursor::ReadInt(int64_t* value) {
  SkipSpace();
  const char* p = text_.data() + pos_;
  const char* end = text_.data() + text_.size();
  const bool negative = p < end && *p == '-';
  if (negative) ++p;
  const char* digits = p;
  uint64_t v = 0;
  // Up to 19 digits cannot overflow uint64; the range check below does the rest.
  while (p < end && static_cast<unsigned char>(*p - '0') < 10 && p - digits < 20) {
    v = v * 10 + static_cast<uint64_t>(*p - '0');
    ++p;
  }
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (p == digits || p - digits > 19 || v > limit ||
      (p < end && (*p == '.' || *p == 'e' || *p == 'E' || static_cast<unsigned char>(*p - '0') < 10))) {
    return Fail("expected an integer");
  }
  *value = negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  pos_ = static_cast<size_t>(p - text_.data());
  return true;
}

bool JsonCursor::ReadUint32(uint32_t* value) {
  int64_t v = 0;
  if (!ReadInt(&v)) return false;
  if (v < 0 || v > 0xffffffffLL) return Fail("expected a line number (0 to 4294967295)");
  *value = static_cast<uint32_t>(v);
  return true;
}

bool JsonCursor::ReadDouble(double* value) {
  SkipSpace();
  const char* begin = text_.data() + pos_;
  const char* end = text_.data() + text_.size();
  // from_chars also takes "inf", "nan" and hex-like spellings that JSON does not have.
  const char* first = begin < end && *begin == '-' ? begin + 1 : begin;
  if (first >= end || static_cast<unsigned char>(*first - '0') >= 10) return Fail("expected a number");
  const auto r = std::from_chars(begin, end, *value);
  if (r.ec != std::errc()) return Fail("expected a number");
  pos_ += static_cast<size_t>(r.ptr - begin);
  return true;
}

bool JsonCursor::ReadBool(bool* value) {
  SkipSpace();
  if (text_.substr(pos_, 4) == "true") {
    *value = true;
    pos_ += 4;
    return true;
  }
  if (text_.substr(pos_, 5) == "false") {
    *value = false;
    pos_ += 5;
    return true;
  }
  return Fail("expected true or false");
}

bool JsonCursor::TryNull() {
  SkipSpace();
  if (text_.substr(pos_, 4) != "null") return false;
  pos_ += 4;
  return true;
}

bool JsonCursor::Skip() {
  SkipSpace();
  if (pos_ >= text_.size()) return Fail("expected a value");
  const char c = text_[pos_];
  bool done = false;
  if (c == '{') {
    if (!BeginObject()) return false;
    std::string_view key;
    while (true) {
      if (!NextKey(&key, &done)) return false;
      if (done) return true;
      if (!Skip()) return false;
    }
  }
  if (c == '[') {
    if (!BeginArray()) return false;
    while (true) {
      if (!NextElement(&done)) return false;
      if (done) return true;
      if (!Skip()) return false;
    }
  }
  if (c == '"') {
    ++pos_;
    std::string_view ignored;
    return StringBody(&ignored, &key_scratch_);
  }
  if (c == 't' || c == 'f') {
    bool ignored;
    return ReadBool(&ignored);
  }
  if (TryNull()) return true;
  double ignored;
  return ReadDouble(&ignored);
}

}  // namespace inprof::internal
