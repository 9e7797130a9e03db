// `inprof grep`: regex search restricted to the hot lines of a profile, in one step. Only the
// sampled lines of each file are ever matched against the pattern, so a search over a large
// tree costs little more than reading the few files the profile names.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli.h"
#include "codesearch.h"
#include "viewer.h"

namespace inprof::viewer {
namespace {

constexpr const char* kGrepHelp = R"(usage: inprof grep [OPTIONS] PATTERN PROFILE [PATH...]

Searches for PATTERN (a regular expression, ECMAScript syntax: Perl-like classes \d \w \s,
(?:...), lazy quantifiers, \b) and prints only the matches on hot lines of PROFILE, each with
its heat: [G<global level> L<local level> incl <inclusive share> self <self share>].
Without PATH, searches the profiled source files (paths under --root are shown relative);
PATHs are files or directories (searched recursively, skipping .git), resolved against the
profile like `inprof hot` does (exact path, realpath, then base name).

options:
  -e PATTERN           a pattern (repeatable; a line matches any); then PATTERN is not given
  -F, --fixed-strings  PATTERN is a plain string
  -i, --ignore-case    case-insensitive
  -w, --word-regexp    match whole words only
  -E, -P               accepted for grep compatibility (the syntax is always ECMAScript)
  -A N, -B N, -C N     lines of context after, before, around each match
      --level N        minimum heat level, 1-5 (default 1)
      --local          use the level within the function instead of the global one
      --min-percent X  hot means an inclusive share of at least X %
      --heat METHOD    recompute levels: share (default) or perf-heatmap
      --threshold T    perf-heatmap's levels for this share of lines (0 < T <= 1)
      --root DIR       base of relative paths (default: the current directory); when
                       given, files are read only from inside DIR (symlinks resolved)
      --map OLD=NEW    the profile's OLD/... is NEW/... here (repeatable)
      --event NAME     the event to use (default: the profile's first)
      --absolute       weights instead of shares
      --json           one JSON object per match (JSON Lines)
      --color[=WHEN]   auto (default), always, never
      --from T, --to T, --thread NAME, --label K=V
                       only the samples of a time range (seconds since the start), of
                       threads, with labels (perf script output, *.speedscope.json)
      --hide REGEX     frames whose function name matches REGEX leave every stack;
                       their weight goes to the caller (repeatable; not annotation JSON)
Exit status: 0 when a hot line matched, 1 when none did, 2 on an error.

examples:
  inprof grep 'std::to_string' profile.json
  inprof grep -w -C 2 --level 4 'push_back' --map /build/app=$HOME/app perf.log
  inprof grep -F 'fmt.Errorf(' profile.json ./internal
)";

int Usage(const std::string& message) { return UsageError("grep", message); }

// The longest line std::regex is run on. libstdc++'s matcher recurses once per character a
// quantifier consumes: a pattern such as "(?:a|b)*c" on a 100,000-character line overflows
// an 8 MiB stack. Longer hot lines are matched only with -F (without std::regex) and
// otherwise counted and reported as not searched.
constexpr size_t kMaxRegexLine = 4096;

std::string EscapeRegex(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c != '\0' && std::strchr("\\^$.|?*+()[]{}", c)) out += '\\';
    out += c;
  }
  return out;
}

struct GrepOptions {
  SearchOptions search;
  std::vector<std::string> patterns;
  bool fixed = false, icase = false, word = false;
  size_t before = 0, after = 0;
};

struct Source {
  std::string read_path;   // where the file is read
  std::string shown_path;  // as printed
  bool explicit_path = false;
};

// Line starts of `text`: starts[n - 1] is where line n begins; one extra entry at the end.
std::vector<size_t> LineStarts(const std::string& text) {
  std::vector<size_t> starts{0};
  for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1)) {
    starts.push_back(at + 1);
  }
  if (starts.back() != text.size()) starts.push_back(text.size() + 1);
  return starts;
}

class Searcher {
 public:
  Searcher(const GrepOptions& o, HeatIndex& index, const std::regex& re)
      : o_(o), index_(index), re_(re) {}

  // Searches one file; anything but kRead when it was not read (`*why` says why).
  SourceFiles::Outcome Search(const Source& source, std::ostream& out, std::string* why) {
    const std::vector<uint32_t> sampled = index_.SampledLines(source.read_path);
    if (sampled.empty()) return SourceFiles::Outcome::kRead;
    current_ = source.shown_path;
    std::string text;
    const SourceFiles::Outcome read = index_.sources().Read(source.read_path, &text, why);
    if (read != SourceFiles::Outcome::kRead) return read;
    if (text.find('\0') != std::string::npos) return read;  // binary, as grep skips it
    const std::vector<size_t> starts = LineStarts(text);
    const uint32_t count = static_cast<uint32_t>(starts.size() - 1);
    auto line_text = [&](uint32_t n) {
      std::string_view t(text.data() + starts[n - 1], starts[n] - starts[n - 1] - 1);
      if (!t.empty() && t.back() == '\r') t.remove_suffix(1);
      return t;
    };
    uint32_t printed_until = 0;  // last line number printed in this file
    for (uint32_t n : sampled) {
      if (n > count) break;
      const HitHeat heat = index_.Lookup(source.read_path, n, n);
      if (!heat.candidates.empty()) {
        if (reported_.insert(source.read_path).second) {
          std::cerr << AmbiguityMessage(index_, source.shown_path, n, heat.candidates) << '\n';
        }
        continue;
      }
      if (!heat.hot) continue;
      const std::string_view line = line_text(n);
      const std::vector<std::pair<size_t, size_t>> matches = Matches(line);
      if (matches.empty()) continue;
      ++matched_;
      if (o_.search.json) {
        out << "{" << HeatJson(o_.search, index_, heat.file, *heat.line, heat.match)
            << ",\"line\":" << n << ",\"matches\":[";
        for (size_t i = 0; i < matches.size(); ++i) {
          out << (i ? "," : "") << "[" << matches[i].first << "," << matches[i].second << "]";
        }
        out << "],\"path\":" << JsonString(source.shown_path)
            << ",\"text\":" << JsonString(std::string(line)) << "}\n";
        continue;
      }
      const uint32_t from = n > o_.before ? n - static_cast<uint32_t>(o_.before) : 1;
      const uint32_t first = std::max(from, printed_until + 1);
      if ((o_.before || o_.after) && any_printed_ && first > printed_until + 1) {
        out << Color("36") << "--" << Reset() << '\n';
      }
      for (uint32_t c = first; c < n; ++c) Context(out, source, c, line_text(c));
      out << Color("35") << Printable(source.shown_path) << Reset() << Color("36") << ':' << Reset()
          << Color("32") << n << Reset() << Color("36") << ':' << Reset()
          << HeatTag(o_.search, index_, *heat.line)
          << (line.empty() || line[0] == ' ' || line[0] == '\t' ? "" : " ");
      size_t at = 0;
      for (const auto& [b, e] : matches) {
        out << Printable(std::string(line.substr(at, b - at))) << Color("01;31")
            << Printable(std::string(line.substr(b, e - b))) << Reset();
        at = e;
      }
      out << Printable(std::string(line.substr(at))) << '\n';
      printed_until = n;
      any_printed_ = true;
      // Trailing context is printed up to the next sampled line that may itself match.
      const auto stop = static_cast<uint32_t>(std::min<uint64_t>(count, uint64_t{n} + o_.after));
      for (uint32_t c = n + 1; c <= stop; ++c) {
        if (std::binary_search(sampled.begin(), sampled.end(), c) &&
            WouldMatch(source, c, line_text(c))) {
          break;
        }
        Context(out, source, c, line_text(c));
        printed_until = c;
      }
    }
    return SourceFiles::Outcome::kRead;
  }

  size_t matched() const { return matched_; }
  // Hot lines too long for std::regex that were not matched, and the first of them.
  size_t skipped() const { return skipped_; }
  const std::string& first_skipped() const { return first_skipped_; }

 private:
  std::string Color(const char* sgr) const {
    return o_.search.color ? std::string("\033[") + sgr + "m" : std::string();
  }
  std::string Reset() const { return o_.search.color ? "\033[0m" : ""; }

  bool WouldMatch(const Source& source, uint32_t n, std::string_view line) {
    const HitHeat heat = index_.Lookup(source.read_path, n, n);
    if (!heat.hot || !heat.candidates.empty()) return false;
    if (line.size() > kMaxRegexLine) return !FixedMatches(line, true).empty();
    return std::regex_search(line.begin(), line.end(), re_);
  }

  // [begin, end) of every match in `line`, left to right.
  std::vector<std::pair<size_t, size_t>> Matches(std::string_view line) {
    if (line.size() > kMaxRegexLine) {
      if (!o_.fixed && skipped_++ == 0) first_skipped_ = current_;
      return FixedMatches(line, false);
    }
    std::vector<std::pair<size_t, size_t>> matches;
    for (std::cregex_iterator it(line.data(), line.data() + line.size(), re_), end; it != end;
         ++it) {
      if (it->length(0) == 0 && !matches.empty()) break;
      matches.emplace_back(static_cast<size_t>(it->position(0)),
                           static_cast<size_t>(it->position(0) + it->length(0)));
      if (it->length(0) == 0) break;
    }
    return matches;
  }

  // -F's matches without std::regex, for lines std::regex cannot take: the leftmost match of
  // any pattern (the first pattern on a tie, as the alternation picks), then on after it.
  // Linear in the line for each pattern. Nothing unless -F.
  std::vector<std::pair<size_t, size_t>> FixedMatches(std::string_view line, bool first_only) {
    std::vector<std::pair<size_t, size_t>> matches;
    if (!o_.fixed) return matches;
    auto fold = [&](char c) {
      return o_.icase && c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    };
    std::string text(line);
    for (char& c : text) c = fold(c);
    std::vector<std::string> patterns;
    for (std::string p : o_.patterns) {
      for (char& c : p) c = fold(c);
      if (!p.empty()) patterns.push_back(std::move(p));
    }
    auto is_word = [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    };
    // \b, as -w wraps the regular expression in it: a word character on one side only.
    auto boundary = [&](size_t i) {
      return (i < text.size() && is_word(text[i])) != (i > 0 && is_word(text[i - 1]));
    };
    auto whole_word = [&](size_t b, size_t e) { return !o_.word || (boundary(b) && boundary(e)); };
    // Where each pattern next matches at or after `from`, kept across the scan: each
    // pattern's search moves only forward, so the whole line costs one pass per pattern.
    std::vector<size_t> next(patterns.size(), 0);
    auto advance = [&](size_t i, size_t from) {
      size_t at = text.find(patterns[i], from);
      while (at != std::string::npos && !whole_word(at, at + patterns[i].size())) {
        at = text.find(patterns[i], at + 1);
      }
      next[i] = at;
    };
    for (size_t i = 0; i < patterns.size(); ++i) advance(i, 0);
    size_t from = 0;
    while (true) {
      size_t best = std::string::npos, which = 0;
      for (size_t i = 0; i < patterns.size(); ++i) {
        if (next[i] != std::string::npos && next[i] < from) advance(i, from);
        if (next[i] < best) best = next[i], which = i;
      }
      if (best == std::string::npos) break;
      const size_t end = best + patterns[which].size();
      matches.emplace_back(best, end);
      if (first_only) break;
      from = end;
    }
    return matches;
  }

  void Context(std::ostream& out, const Source& source, uint32_t n, std::string_view line) {
    out << Color("35") << Printable(source.shown_path) << Reset() << Color("36") << '-' << Reset()
        << Color("32") << n << Reset() << Color("36") << '-' << Reset()
        << Printable(std::string(line)) << '\n';
  }

  const GrepOptions& o_;
  HeatIndex& index_;
  const std::regex& re_;
  std::string current_;  // the file being searched, as shown
  size_t skipped_ = 0;
  std::string first_skipped_;
  std::set<std::string> reported_;
  size_t matched_ = 0;
  bool any_printed_ = false;
};

std::string Shown(const std::string& path, const std::string& root) {
  if (path.size() > root.size() + 1 && path.starts_with(root) && path[root.size()] == '/') {
    return path.substr(root.size() + 1);
  }
  if (root == "/" && path.starts_with('/')) return path.substr(1);
  return path;
}

// The patterns as one regular expression (-F escapes them, -w wraps them in \b).
StatusOr<std::regex> CompilePattern(const GrepOptions& o) {
  std::string expression;
  for (const std::string& p : o.patterns) {
    expression += (expression.empty() ? "" : "|") + ("(?:" + (o.fixed ? EscapeRegex(p) : p) + ")");
  }
  if (o.word) expression = "\\b(?:" + expression + ")\\b";
  try {
    auto flags = std::regex::ECMAScript | std::regex::optimize;
    if (o.icase) flags |= std::regex::icase;
    return std::regex(expression, flags);
  } catch (const std::regex_error& e) {
    return Status::InvalidArgument("bad pattern '" + o.patterns.front() + "': " + e.what());
  }
}

// The files to search: the PATHs (directories recursively, skipping VCS folders), or every
// profiled file when none are given. Sets *error after reporting a path that cannot be read.
std::vector<Source> SourcesToSearch(const std::vector<std::string>& paths, const HeatIndex& index,
                                    bool* error_out) {
  const std::string& root = index.root();
  bool& error = *error_out;
  std::vector<Source> sources;
  if (paths.empty()) {
    for (const FileHeat& file : index.files()) {
      sources.push_back({file.path, Shown(file.path, root), false});
    }
  } else {
    namespace fs = std::filesystem;
    for (const std::string& path : paths) {
      std::error_code ec;
      const fs::path base = fs::path(path).is_absolute() ? fs::path(path) : fs::path(root) / path;
      if (fs::is_directory(base, ec)) {
        std::vector<std::string> found;
        fs::recursive_directory_iterator it(base, fs::directory_options::skip_permission_denied,
                                            ec),
            end;
        for (; !ec && it != end; it.increment(ec)) {
          const std::string name = it->path().filename().string();
          if (it->is_directory(ec) && (name == ".git" || name == ".hg" || name == ".svn")) {
            it.disable_recursion_pending();
            continue;
          }
          if (it->is_regular_file(ec)) found.push_back(it->path().lexically_normal().string());
        }
        if (ec) {
          std::cerr << "inprof: " << path << ": " << ec.message() << '\n';
          error = true;
        }
        std::sort(found.begin(), found.end());
        for (std::string& f : found) {
          sources.push_back(
              {f, fs::path(f).is_absolute() && !fs::path(path).is_absolute() ? Shown(f, root) : f,
               true});
        }
      } else if (fs::exists(base, ec)) {
        sources.push_back({base.lexically_normal().string(), path, true});
      } else {
        std::cerr << "inprof: " << path << ": No such file or directory\n";
        error = true;
      }
    }
  }
  return sources;
}

// grep's own options after the shared ones. grep habits that change nothing here (-E, -P,
// -n, -r, -H) are accepted and set *ignored.
std::vector<OptionSpec> GrepSpecs(GrepOptions* o, bool* ignored) {
  std::vector<OptionSpec> specs = SearchSpecs(&o->search, /*short_event=*/false);
  const std::vector<OptionSpec> own = {
      {{"-e", "--regexp"},
       "a pattern",
       [o](const std::string& p) { return o->patterns.push_back(p), true; }},
      Flag({"-F", "--fixed-strings"}, &o->fixed),
      Flag({"-i", "--ignore-case"}, &o->icase),
      Flag({"-w", "--word-regexp"}, &o->word),
      // The syntax is always ECMAScript, line numbers always shown, PATHs always searched
      // recursively, file names always shown.
      Flag({"-E", "-P", "-n", "-r", "-H"}, ignored),
      Count({"-A"}, "a number of lines", &o->after, 0, 999999999),
      Count({"-B"}, "a number of lines", &o->before, 0, 999999999),
      {{"-C"},
       "a number of lines",
       [o](const std::string& text) {
         size_t context = 0;
         if (!ParseCount(text, &context)) return false;
         o->before = o->after = context;
         return true;
       }},
  };
  specs.insert(specs.end(), own.begin(), own.end());
  return specs;
}

}  // namespace

int RunGrep(const std::vector<std::string>& args) {
  GrepOptions o;
  std::vector<std::string> positional;
  bool ignored = false;
  std::vector<OptionSpec> specs = GrepSpecs(&o, &ignored);
  bool help = false;
  if (Status s = ParseOptions("grep", args, 1, specs, &positional, &help); !s.ok()) {
    return Usage(s.message());
  }
  if (help) {
    std::cout << kGrepHelp;
    return 0;
  }
  if (o.patterns.empty()) {
    if (positional.empty()) return Usage("grep needs a PATTERN and a PROFILE");
    o.patterns.push_back(positional.front());
    positional.erase(positional.begin());
  }
  if (positional.empty()) return Usage("grep needs a PROFILE after the PATTERN");
  const std::string profile_path = positional.front();
  const std::vector<std::string> paths(positional.begin() + 1, positional.end());

  StatusOr<std::regex> compiled = CompilePattern(o);
  if (!compiled.ok()) return Usage(compiled.status().message());
  const std::regex& re = *compiled;
  SearchProfile profile;
  if (!LoadSearchProfile(profile_path, o.search, &profile)) return kSearchError;
  HeatIndex& index = *profile.index;

  bool error = false;
  const std::vector<Source> sources = SourcesToSearch(paths, index, &error);
  Searcher searcher(o, index, re);
  std::ostringstream out;
  size_t unreadable = 0;
  std::string first_unreadable;
  for (const Source& source : sources) {
    std::string why;
    const SourceFiles::Outcome read = searcher.Search(source, out, &why);
    if (read == SourceFiles::Outcome::kMissing) {
      if (source.explicit_path) {
        std::cerr << "inprof: cannot read " << Printable(source.shown_path) << ": " << why << '\n';
        error = true;
      } else if (unreadable++ == 0) {
        first_unreadable = source.read_path;
      }
    } else if (read != SourceFiles::Outcome::kRead && source.explicit_path) {
      // Profiled files refused for the same reasons are counted at the end instead.
      std::cerr << "inprof: " << Printable(source.shown_path) << ": not read: " << why << '\n';
    }
    if (out.tellp() > (1 << 16)) {
      std::cout << out.str();
      out.str("");
    }
  }
  std::cout << out.str();
  std::cout.flush();
  if (unreadable > 0) {
    // Profiles name files that are not here (system headers, another machine's checkout):
    // one line says so without failing the search.
    std::cerr << "inprof: " << unreadable << " profiled source file" << (unreadable == 1 ? "" : "s")
              << " with sampled lines could not be read (first: " << first_unreadable
              << "); --map OLD=NEW says where they are\n";
  }
  if (searcher.skipped() > 0) {
    std::cerr << "inprof: " << searcher.skipped() << " hot line"
              << (searcher.skipped() == 1 ? " was" : "s were") << " longer than " << kMaxRegexLine
              << " bytes and not matched (first in " << Printable(searcher.first_skipped())
              << "); -F matches lines of any length\n";
  }
  ReportRefusedSources(index);
  if (!std::cout) {
    std::cerr << "inprof: cannot write the output\n";
    return kSearchError;
  }
  if (error) return kSearchError;
  return searcher.matched() > 0 ? kSearchPassed : kSearchNothing;
}

}  // namespace inprof::viewer
