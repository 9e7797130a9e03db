// `inprof hot`: a filter for the output of any search tool. Reads hit lines on stdin
// (hit_line.h), keeps those on hot lines of the profile and annotates each with its heat.
// A multi-line hit is hot when any of its lines is, as gogrep's IsHot() decides.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cli.h"
#include "codesearch.h"
#include "hit_line.h"
#include "input_files.h"
#include "viewer.h"

namespace inprof::viewer {
namespace {

constexpr const char* kHotHelp = R"(usage: SEARCH-COMMAND | inprof hot [OPTIONS] PROFILE

Keeps the hits of any search tool that fall on hot lines of PROFILE, each annotated with its
heat: [G<global level> L<local level> incl <inclusive share> self <self share>].
Reads lines "path:line:text" or "path:line:col:text" on stdin (grep -n, rg -n --column,
git grep -n, gogrep, semgrep --vim); a multi-line hit "path:first-last:text" or
"path:line:col-last:col:text" is hot when any of its lines is. Other lines are skipped.

A line is hot when its global heat level (0-5) is at least --level. Level 5 is the line with
the most self time, others follow their share of it; every line with at least 1 % inclusive
or 0.1 % self weight has a level, and lines that only pass time on to callees are at most 1
(docs/heat.md).

options:
      --level N        minimum heat level, 1-5 (default 1: any level)
      --local          use the level within the line's function instead of the global one
      --min-percent X  hot means an inclusive share of at least X % (instead of a level)
      --heat METHOD    recompute levels: share (default) or perf-heatmap (gogrep's levels)
      --threshold T    perf-heatmap's levels, for this share of lines (0 < T <= 1)
      --root DIR       resolve relative paths against DIR (default: the current directory);
                       when given, files are read only from inside DIR
      --map OLD=NEW    the profile's OLD/... is NEW/... here (repeatable)
      --plain          pass hot lines through unchanged, without the heat
      --json           one JSON object per hot hit (JSON Lines)
      --line-buffered  flush after every line (for a live pipe)
  -e, --event NAME     the event to use (default: the profile's first)
      --absolute       weights instead of shares
      --color[=WHEN]   auto (default), always, never
      --from T, --to T, --thread NAME, --label K=V
                       only the samples of a time range (seconds since the start), of
                       threads, with labels (perf script output, *.speedscope.json)
      --hide REGEX     frames whose function name matches REGEX leave every stack;
                       their weight goes to the caller (repeatable; not annotation JSON)
Paths that match no profile file are tried by base name (a profile from another machine);
when several profile files share it, the path suffix and then the function at the hit decide,
and what stays ambiguous is reported on stderr and skipped.
Exit status: 0 when a hit passed, 1 when none did, 2 on an error.

examples:
  grep -rn 'std::to_string' src | inprof hot profile.json
  grep -Hn 'memcpy' parse.c | inprof hot profile.json     (one file: -H prints its path)
  rg -n --column 'fmt\.Errorf' | inprof hot --level 3 --map /build/app=. profile.json
  git grep -n 'push_back' | inprof hot --local --min-percent 1 perf.log
)";

int Usage(const std::string& message) { return UsageError("hot", message); }

class Output {
 public:
  explicit Output(bool line_buffered) : line_buffered_(line_buffered) { buffer_.reserve(1 << 17); }
  void Line(std::string_view text) {
    buffer_ += text;
    buffer_ += '\n';
    if (line_buffered_ || buffer_.size() >= (1 << 16)) Flush();
  }
  bool Flush() {
    size_t done = 0;
    while (done < buffer_.size()) {
      const ssize_t n = write(STDOUT_FILENO, buffer_.data() + done, buffer_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        failed_ = true;
        break;
      }
      done += static_cast<size_t>(n);
    }
    buffer_.clear();
    return !failed_;
  }
  bool failed() const { return failed_; }

 private:
  std::string buffer_;
  bool line_buffered_;
  bool failed_ = false;
};

// Passes the hit lines on hot lines to `out`, annotated with their heat (or as they are with
// `plain`); reports each ambiguous path once on stderr.
class HitFilter {
 public:
  HitFilter(const SearchOptions& o, HeatIndex& index, bool plain, Output& out)
      : o_(o), index_(index), plain_(plain), out_(out) {}

  void Process(std::string_view line) {
    ++lines_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find('\033') != std::string_view::npos) {
      stripped_ = StripColor(line);
      line = stripped_;
    }
    // "12:text": grep -n on a single file prints no path.
    size_t digits = 0;
    while (digits < line.size() && line[digits] >= '0' && line[digits] <= '9') ++digits;
    if (digits > 0 && digits < line.size() && line[digits] == ':') ++pathless_;
    HitLine hit;
    if (!ParseHitLine(line, &hit)) return;
    ++hits_;
    const HitHeat heat = index_.Lookup(hit.path, hit.first, hit.last);
    if (!heat.candidates.empty()) {
      if (ambiguous_reported_.insert(std::string(hit.path)).second) {
        std::cerr << AmbiguityMessage(index_, hit.path, hit.first, heat.candidates) << '\n';
      }
      return;
    }
    if (!heat.hot) return;
    ++passed_;
    if (plain_) {
      out_.Line(line);
    } else if (o_.json) {
      out_.Line("{\"column\":" + std::to_string(hit.column) +
                ",\"end_line\":" + std::to_string(hit.last) + "," +
                HeatJson(o_, index_, heat.file, *heat.line, heat.match) + ",\"line\":" +
                std::to_string(hit.first) + ",\"path\":" + JsonString(std::string(hit.path)) +
                ",\"text\":" + JsonString(std::string(line.substr(hit.text))) + "}");
    } else {
      std::string annotated(line.substr(0, hit.text));
      annotated += HeatTag(o_, index_, *heat.line);
      if (hit.text < line.size() && line[hit.text] != ' ' && line[hit.text] != '\t') {
        annotated += ' ';
      }
      annotated += line.substr(hit.text);
      out_.Line(annotated);
    }
  }
  size_t lines() const { return lines_; }
  size_t hits() const { return hits_; }
  size_t passed() const { return passed_; }
  size_t pathless() const { return pathless_; }

 private:
  const SearchOptions& o_;
  HeatIndex& index_;
  const bool plain_;
  Output& out_;
  std::set<std::string, std::less<>> ambiguous_reported_;
  size_t lines_ = 0, hits_ = 0, passed_ = 0, pathless_ = 0;
  std::string stripped_;
};

// The longest input line kept. Search output quotes the searched line, which may be a whole
// minified file; a line without end (`cat /dev/zero | inprof hot`) must not take all memory.
constexpr size_t kMaxInputLine = size_t{16} << 20;

// Calls `process` with every line read from `fd` (without its newline; a last line without
// one too), in chunks, stopping early once `out` failed. Lines longer than kMaxInputLine are
// dropped and counted in *overlong. False (after saying why) on a read error.
template <typename Process>
bool ForEachLine(int fd, const Output& out, size_t* overlong, Process process) {
  std::string pending;
  bool dropping = false;  // inside a line that is too long: skip to its end
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::cerr << "inprof: cannot read the standard input: " << std::strerror(errno) << '\n';
      return false;
    }
    if (n == 0) break;
    std::string_view chunk(buffer, static_cast<size_t>(n));
    while (!chunk.empty()) {
      const size_t newline = chunk.find('\n');
      if (newline == std::string_view::npos) {
        if (!dropping && pending.size() + chunk.size() > kMaxInputLine) {
          dropping = true;
          ++*overlong;
          std::string().swap(pending);
        }
        if (!dropping) pending += chunk;
        break;
      }
      if (dropping) {
        dropping = false;
      } else if (pending.empty()) {
        process(chunk.substr(0, newline));
      } else {
        pending += chunk.substr(0, newline);
        process(pending);
        pending.clear();
      }
      chunk.remove_prefix(newline + 1);
    }
    if (out.failed()) break;
  }
  if (!pending.empty()) process(pending);
  return true;
}

}  // namespace

int RunHot(const std::vector<std::string>& args) {
  SearchOptions o;
  bool plain = false, line_buffered = false;
  std::vector<std::string> positional;
  std::vector<OptionSpec> specs = SearchSpecs(&o, /*short_event=*/true);
  specs.push_back(Flag({"--plain"}, &plain));
  specs.push_back(Flag({"--line-buffered"}, &line_buffered));
  bool help = false;
  if (Status s = ParseOptions("hot", args, 1, specs, &positional, &help); !s.ok()) {
    return Usage(s.message());
  }
  if (help) {
    std::cout << kHotHelp;
    return 0;
  }
  if (positional.empty()) return Usage("hot needs a PROFILE file (hits come on stdin)");
  if (positional.size() > 1) {
    return Usage("hot takes one PROFILE, got '" + positional[1] +
                 "' too (hits come on stdin; use `inprof grep` to search files)");
  }
  SearchProfile profile;
  if (!LoadSearchProfile(positional[0], o, &profile)) return kSearchError;
  HeatIndex& index = *profile.index;

  Output out(line_buffered);
  HitFilter filter(o, index, plain, out);
  size_t overlong = 0;
  if (!ForEachLine(STDIN_FILENO, out, &overlong,
                   [&](std::string_view line) { filter.Process(line); })) {
    return kSearchError;
  }
  if (overlong > 0) {
    std::cerr << "inprof: " << overlong << " input line" << (overlong == 1 ? " was" : "s were")
              << " longer than " << ByteSize(kMaxInputLine) << " and skipped\n";
  }
  if (!out.Flush()) {
    std::cerr << "inprof: cannot write the output: " << std::strerror(errno) << '\n';
    return kSearchError;
  }
  if (filter.passed() == 0 && filter.pathless() > 0 && filter.pathless() * 2 >= filter.lines()) {
    std::cerr << "inprof: the input lines start with a line number and no path (grep -n on one "
                 "file prints none): add -H, as in grep -Hn PATTERN FILE | inprof hot "
              << ShellQuote(positional[0]) << '\n';
  } else if (filter.lines() > 0 && filter.hits() == 0) {
    std::cerr << "inprof: no input line looked like a search hit (PATH:LINE:TEXT, as grep -n "
                 "prints it)\n";
  }
  ReportRefusedSources(index);
  return filter.passed() > 0 ? kSearchPassed : kSearchNothing;
}

}  // namespace inprof::viewer
