// perf.log read back the way perfanno.nvim reads it (docs/formats.md, "perf.log for
// perfanno.nvim"): the count is the digits at the end of the line; each frame is the
// shortest text ending in ":<digits>" (the line is not split on ';'), matched as
// "symbol /absolute/path:line".
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "inprof/perf_log.h"
#include "stacks.h"

namespace inprof {

Status ReadPerfLog(std::string_view text, const std::string& name, Profile* out) {
  internal::ProfileAssembler assembler;
  std::string error;
  auto fail = [&](size_t number, const char* expected) {
    error = name + ":" + std::to_string(number) + ": " + expected;
    return false;
  };
  const bool ok = internal::ForEachLine(text, [&](std::string_view line, size_t number) {
    if (line.empty()) return true;
    size_t digits = line.size();
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(line[digits - 1]))) --digits;
    int64_t count = 0;
    if (digits == line.size() || !internal::ParseCount(line.substr(digits), &count)) {
      return fail(number, "expected the line to end in a count (digits)");
    }
    std::vector<uint32_t> frames;
    size_t pos = 0;
    while (true) {
      if (pos < line.size() && line[pos] == ';') ++pos;
      // Shortest text ending in ':' + digits (the digits taken greedily).
      size_t colon = pos;
      while (true) {
        colon = line.find(':', colon);
        if (colon == std::string_view::npos || colon + 1 >= line.size() ||
            std::isdigit(static_cast<unsigned char>(line[colon + 1]))) {
          break;
        }
        ++colon;
      }
      if (colon == std::string_view::npos || colon + 1 >= line.size()) break;
      size_t end = colon + 1;
      while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
      const std::string_view frame = line.substr(pos, end - pos);
      pos = end;
      if (end == line.size()) break;  // the count itself ("...:12" ends the line)
      const size_t slash = frame.find('/');
      const size_t last_colon = frame.rfind(':');
      int64_t line_number = 0;
      if (slash == std::string_view::npos || slash > last_colon ||
          !internal::ParseCount(frame.substr(last_colon + 1), &line_number) || line_number <= 0 ||
          line_number > 0xffffffff) {
        return fail(number, "expected frames of the form 'symbol /absolute/path:LINE'");
      }
      frames.push_back(assembler.Intern(frame, [&] {
        Frame f;
        std::string_view symbol = frame.substr(0, slash);
        while (!symbol.empty() && std::isspace(static_cast<unsigned char>(symbol.back()))) {
          symbol.remove_suffix(1);
        }
        f.function = std::string(symbol);
        f.file = std::string(frame.substr(slash, last_colon - slash));
        f.line = static_cast<uint32_t>(line_number);
        return f;
      }));
    }
    if (frames.empty()) return fail(number, "expected at least one 'symbol /path:LINE' frame");
    assembler.AddSample(std::move(frames), count);
    return true;
  });
  if (!ok) return Status::Error(error);
  *out = assembler.Finish();
  return Status::Ok();
}

}  // namespace inprof
