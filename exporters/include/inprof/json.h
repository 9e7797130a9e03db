// The small JSON toolkit of the formats that are JSON (annotation JSON, speedscope) and of the
// viewer's JSON output: string quoting for writers, and a pull cursor for readers. The cursor walks the text once, without building a tree, so a
// reader fills its model straight from the bytes; errors carry the 1-based line number.
#ifndef INPROF_JSON_H_
#define INPROF_JSON_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace inprof::internal {

// Appends `text` as a JSON string literal (quotes included). Control characters are escaped;
// bytes that are not valid UTF-8 become U+FFFD so the output is always valid JSON.
// Not async-signal-safe.
void AppendJsonString(std::string& out, std::string_view text);

// True when `text` is valid UTF-8 (what AppendJsonString writes unchanged).
// Not async-signal-safe.
bool IsValidUtf8(std::string_view text);

// `text` as AppendJsonString will write it, without the quotes: invalid bytes as U+FFFD.
// Not async-signal-safe.
std::string RepairUtf8(std::string_view text);

// Appends a number: integers exactly, doubles in the shortest form that reads back equal
// (non-finite values as 0). Not async-signal-safe.
void AppendJsonNumber(std::string& out, int64_t value);
void AppendJsonNumber(std::string& out, double value);

// Reads a JSON text token by token. Every method returns false on malformed input and keeps
// the first error (message and line); callers just propagate false.
//
// Built for 100 MB files: keys come back as views into the text (no copy, no allocation),
// numbers are parsed in place, and the per-token paths are inline. Strict JSON where it
// matters for round trips: numbers must start with '-' or a digit (no "inf", "nan", "+1").
// Not thread-safe; not async-signal-safe.
class JsonCursor {
 public:
  explicit JsonCursor(std::string_view text) : text_(text) {}

  // Containers. After BeginObject/BeginArray, call NextKey/NextElement until it sets
  // `*done`; they consume the separators and the closing bracket.
  bool BeginObject() { return Begin('{', "expected an object ('{')"); }
  bool BeginArray() { return Begin('[', "expected an array ('[')"); }
  // `*key` views the text (or, for a key with escapes, a buffer) until the next call.
  bool NextKey(std::string_view* key, bool* done);
  bool NextKey(std::string* key, bool* done);
  bool NextElement(bool* done) {
    *done = false;
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      --depth_;
      first_ = false;
      *done = true;
      return true;
    }
    if (first_) {
      first_ = false;
      return true;
    }
    if (pos_ < text_.size() && text_[pos_] == ',') {
      ++pos_;
      return true;
    }
    return Fail("expected ',' or ']' after an array element");
  }

  bool ReadString(std::string* value);
  bool ReadInt(int64_t* value);
  bool ReadUint32(uint32_t* value);
  bool ReadDouble(double* value);
  bool ReadBool(bool* value);
  // True (and consumes it) when the next value is `null`.
  bool TryNull();
  // Skips one value of any kind (forward compatibility: unknown keys).
  bool Skip();
  // True when only whitespace is left.
  bool AtEnd();

  bool Fail(std::string expected);
  // Fails like Fail, but at the line of an earlier position (from position()).
  bool FailAt(size_t position, std::string expected);
  size_t position() const { return pos_; }
  const std::string& error() const { return error_; }
  size_t error_line() const { return error_line_; }

 private:
  static bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
  void SkipSpace() {
    while (pos_ < text_.size() && IsSpace(text_[pos_])) ++pos_;
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Begin(char open, const char* expected);
  // The string at pos_ (after its opening quote): a view into the text when it has no
  // escapes, else decoded into `scratch`.
  bool StringBody(std::string_view* value, std::string* scratch);
  bool DecodeEscapes(size_t start, std::string* out);
  size_t LineAt(size_t pos) const;

  std::string_view text_;
  size_t pos_ = 0;
  bool first_ = false;  // the next NextKey/NextElement is the first of its container
  std::string error_;
  size_t error_line_ = 0;
  int depth_ = 0;
  std::string key_scratch_;
};

// Calls `element()` for each element of the array at the cursor; `element` must consume it.
template <typename Element>
bool ReadArray(JsonCursor& c, Element element) {
  bool done = false;
  if (!c.BeginArray()) return false;
  while (true) {
    if (!c.NextElement(&done)) return false;
    if (done) return true;
    if (!element()) return false;
  }
}

// Calls `member(key)` for each member of the object at the cursor; `member` must consume the
// value. `key` views the text: keys are never copied.
template <typename Member>
bool ReadObject(JsonCursor& c, Member member) {
  bool done = false;
  std::string_view key;
  if (!c.BeginObject()) return false;
  while (true) {
    if (!c.NextKey(&key, &done)) return false;
    if (done) return true;
    if (!member(key)) return false;
  }
}

}  // namespace inprof::internal

#endif  // INPROF_JSON_H_
