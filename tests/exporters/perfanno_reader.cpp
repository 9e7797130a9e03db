#include "perfanno_reader.h"

#include <fstream>
#include <sstream>

namespace inprof::test {
namespace {

// Lua's %d and %s in the C locale.
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// Where "(%d+)$" starts in `line`, or npos.
size_t TrailingDigits(std::string_view line) {
  size_t start = line.size();
  while (start > 0 && IsDigit(line[start - 1])) --start;
  return start == line.size() ? std::string_view::npos : start;
}

// One match of gmatch(";?(.-:%d+)") at or after `from`: the capture [begin, end) and the
// position the next match starts from. False when there is no further match. Since ".-" can
// cross anything, a match exists iff some ':' followed by a digit lies ahead; the lazy ".-"
// stops at the first one and the greedy "%d+" takes all its digits. ";?" swallows one ';' at
// the start of the match.
bool NextFrame(std::string_view line, size_t from, size_t& begin, size_t& end) {
  if (from >= line.size()) return false;
  begin = line[from] == ';' ? from + 1 : from;
  for (size_t i = begin; i + 1 < line.size(); ++i) {
    if (line[i] == ':' && IsDigit(line[i + 1])) {
      end = i + 1;
      while (end < line.size() && IsDigit(line[end])) ++end;
      return true;
    }
  }
  return false;
}

// "^(.-)%s*(/.+):(%d+)$" on one frame. The frame ends in ":<digits>" and has no other
// ":<digit>", so: symbol = text before the first '/' with trailing %s removed, path = from
// that '/' up to the last ':', line = the digits.
bool SplitFrame(std::string_view frame, PerfannoFrame& out, std::string& why) {
  const size_t slash = frame.find('/');
  const size_t colon = frame.rfind(':');
  if (slash == std::string_view::npos || colon == std::string_view::npos || colon < slash + 2) {
    why = "frame \"" + std::string(frame) + "\" is not 'symbol /absolute/path:line'";
    return false;
  }
  size_t symbol_end = slash;
  while (symbol_end > 0 && IsSpace(frame[symbol_end - 1])) --symbol_end;
  out.symbol = std::string(frame.substr(0, symbol_end));
  out.path = std::string(frame.substr(slash, colon - slash));
  const std::string_view digits = frame.substr(colon + 1);
  if (digits.empty() || digits.size() > 18) {
    why = "frame \"" + std::string(frame) + "\" has no usable line number";
    return false;
  }
  out.line = 0;
  for (char c : digits) {
    if (!IsDigit(c)) {
      why = "frame \"" + std::string(frame) + "\" does not end in ':<line>'";
      return false;
    }
    out.line = out.line * 10 + static_cast<uint64_t>(c - '0');
  }
  // What perfanno would accept but mis-read, or what our writer promises never to write.
  if (!out.symbol.empty() && IsSpace(out.symbol.front())) {
    why = "symbol \"" + out.symbol + "\" starts with a space (perfanno keeps it)";
    return false;
  }
  if (!out.symbol.empty() && symbol_end == slash) {
    why = "frame \"" + std::string(frame) + "\" has no space between symbol and path";
    return false;
  }
  if (out.symbol.find(';') != std::string::npos) {
    why = "symbol \"" + out.symbol +
          "\" contains ';' (a frame without file:line was glued onto the next one)";
    return false;
  }
  if (out.line == 0) {
    why = "frame \"" + std::string(frame) + "\" has line 0";
    return false;
  }
  return true;
}

bool ParseLine(std::string_view line, PerfannoStack& stack, std::string& why) {
  if (line.empty()) {
    why = "blank line (perfanno fails on it)";
    return false;
  }
  if (line.find('\r') != std::string_view::npos) {
    why = "carriage return (perfanno fails on it)";
    return false;
  }
  const size_t count_at = TrailingDigits(line);
  if (count_at == std::string_view::npos) {
    why = "line does not end in a count (trailing space or comment? perfanno fails on it)";
    return false;
  }
  size_t pos = 0;
  size_t begin = 0;
  size_t end = 0;
  while (NextFrame(line, pos, begin, end)) {
    // Frames are separated by exactly one ';' (perfanno would also take a frame glued on
    // without one, or an empty first frame; our writer never writes either).
    const bool separated = stack.frames.empty() ? begin == 0 : line[pos] == ';' && begin == pos + 1;
    if (!separated) {
      why = "expected a frame separated by one ';' at column " + std::to_string(pos + 1);
      return false;
    }
    PerfannoFrame frame;
    if (!SplitFrame(line.substr(begin, end - begin), frame, why)) return false;
    stack.frames.push_back(std::move(frame));
    pos = end;
  }
  if (stack.frames.empty()) {
    why = "stack without any file:line frame";
    return false;
  }
  // perfanno ignores whatever lies between the last frame and the count; we do not.
  if (pos + 1 != count_at || line[pos] != ' ') {
    why = "expected exactly one space between the last frame and the count, got \"" +
          std::string(line.substr(pos)) + "\"";
    return false;
  }
  const std::string_view digits = line.substr(count_at);
  if (digits.size() > 19) {
    why = "count too large";
    return false;
  }
  stack.count = 0;
  for (char c : digits) stack.count = stack.count * 10 + static_cast<uint64_t>(c - '0');
  if (stack.count == 0) {
    why = "zero count";
    return false;
  }
  return true;
}

}  // namespace

PerfannoLog ParsePerfannoLog(std::string_view text) {
  PerfannoLog log;
  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t newline = text.find('\n');
    if (newline == std::string_view::npos) {
      log.error = "line " + std::to_string(line_number) + ": missing final newline";
      return log;
    }
    PerfannoStack stack;
    std::string why;
    if (!ParseLine(text.substr(0, newline), stack, why)) {
      log.error = "line " + std::to_string(line_number) + ": " + why;
      return log;
    }
    log.stacks.push_back(std::move(stack));
    text.remove_prefix(newline + 1);
  }
  return log;
}

PerfannoLog ReadPerfannoLog(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    PerfannoLog log;
    log.error = "cannot read " + path;
    return log;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return ParsePerfannoLog(text.str());
}

std::ostream& operator<<(std::ostream& out, const PerfannoFrame& frame) {
  return out << '{' << '"' << frame.symbol << "\" " << frame.path << ':' << frame.line << '}';
}

std::ostream& operator<<(std::ostream& out, const PerfannoStack& stack) {
  out << '[';
  for (size_t i = 0; i < stack.frames.size(); ++i) out << (i ? "; " : "") << stack.frames[i];
  return out << "] x" << stack.count;
}

}  // namespace inprof::test
