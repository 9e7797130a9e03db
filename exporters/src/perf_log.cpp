// perf.log for perfanno.nvim's :PerfLoadFlameGraph.
//
// perfanno does not split the line on ';'. For every line it takes the count with
// `line:match("(%d+)$")` and the frames with `line:gmatch(";?(.-:%d+)")`, i.e. each frame is
// the shortest text that ends in ":<digits>"; then each frame is matched against
// "^(.-)%s*(/.+):(%d+)$" (symbol, absolute path, line). See docs/formats.md,
// "perf.log for perfanno.nvim". Hence:
//   - a frame without ":<digits>" is glued onto the next frame, so such frames are dropped;
//   - a ':' followed by a digit anywhere in a symbol or path cuts the frame there;
//   - the path starts at the first '/', so a '/' in the symbol ("operator/") moves the path;
//   - a line that does not end in digits (CR, trailing space, blank line, comment) gives a
//     nil count and a Lua error that aborts the whole load.
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "inprof/perf_log.h"
#include "perf_log_text.h"
#include "stacks.h"

namespace inprof {
namespace internal {

std::string PerfLogSymbol(std::string_view function) {
  std::string symbol(function);
  // ';' becomes ':' as in folded output, before the ":<digit>" pass below sees it.
  // '/' becomes '\': no C++ operator is spelled with '\', so "operator\" still reads as
  // operator/, and perfanno only displays symbols (it never uses them as a pattern).
  for (char& c : symbol) {
    if (c == ';') c = ':';
    if (c == '/') c = '\\';
  }
  // ":<digit>" becomes ".<digit>": clang's "(lambda at \x\f.cpp:12:3)" reads as
  // "(lambda at \x\f.cpp.12.3)" instead of ending the frame at ":12".
  for (size_t i = 0; i + 1 < symbol.size(); ++i) {
    if (symbol[i] == ':' && std::isdigit(static_cast<unsigned char>(symbol[i + 1]))) {
      symbol[i] = '.';
    }
  }
  ReplaceControlChars(symbol);
  // perfanno's "%s*" eats the spaces before the path but keeps leading ones in the symbol.
  TrimSpaces(symbol);
  return symbol;
}

bool IsPerfLogPath(std::string_view file) {
  // perfanno requires an absolute path. A path cannot be renamed the way a symbol can (the
  // editor opens it), so one that perfanno would cut short is not written at all.
  if (file.size() < 2 || file.front() != '/') return false;
  for (size_t i = 0; i < file.size(); ++i) {
    const auto c = static_cast<unsigned char>(file[i]);
    if (c < 0x20 || c == 0x7f) return false;
    if (c == ':' && i + 1 < file.size() && std::isdigit(static_cast<unsigned char>(file[i + 1]))) {
      return false;
    }
  }
  return true;
}

std::optional<std::string> PerfLogFrameText(const Frame& frame) {
  // Synthetic frames ("[truncated]", "[overflow]") have no place in the editor, even if a
  // caller gave one a location.
  if (frame.kind == FrameKind::kSynthetic || !frame.has_source() || !IsPerfLogPath(frame.file)) {
    return std::nullopt;
  }
  std::string text = PerfLogSymbol(frame.function);
  if (!text.empty()) text += ' ';
  text += frame.file;
  text += ':';
  text += std::to_string(frame.line);
  return text;
}

}  // namespace internal

void WritePerfLog(const Profile& profile, const ExportOptions& options, std::ostream& out) {
  std::vector<std::optional<std::string>> rendered;
  rendered.reserve(profile.frames.size());
  for (const Frame& frame : profile.frames) rendered.push_back(internal::PerfLogFrameText(frame));

  // Inlined frames are written like any other: each is a real source line, and perfanno's
  // caller/callee edges between consecutive frames are right for them too. No "_[i]" hint:
  // nothing may follow the line number.
  internal::StackMerger merger;
  std::string stack;
  for (const Sample& sample : profile.samples) {
    const uint64_t weight = internal::SampleWeight(sample, options.event);
    if (weight == 0) continue;
    stack.clear();
    for (uint32_t index : sample.frames) {
      if (index >= rendered.size() || !rendered[index]) continue;
      if (!stack.empty()) stack += ';';
      stack += *rendered[index];
    }
    // A stack with no source line left would be a line with only a count: leave it out.
    if (!stack.empty()) merger.Add(stack, weight);
  }
  merger.WriteSorted(out);
}

}  // namespace inprof
