// Loading a profile file of any supported kind into the annotation model, and the filter
// options every command applies to what it loads.
#include <algorithm>
#include <memory>
#include <string>

#include "inprof/annotation_json.h"
#include "inprof/folded.h"
#include "inprof/perf_log.h"
#include "inprof/perf_script.h"
#include "inprof/pprof.h"
#include "inprof/profile_filter.h"
#include "inprof/speedscope.h"
#include "input_files.h"
#include "names.h"
#include "progress.h"
#include "viewer.h"

namespace inprof::viewer {
namespace {

// A profile file's bytes (input_files.h: regular files mapped, pipes read, both bounded),
// with the load's progress on stderr when asked.
class FileText {
 public:
  // With `progress`, a long load shows its progress on stderr through `*shown`, which the
  // caller keeps until parsing ends.
  Status Open(const std::string& path, bool progress, std::unique_ptr<Progress>* shown) {
    uint64_t size = 0;
    if (Status s = file_.Open(path, /*pipes=*/true, &size); !s.ok()) return s;
    *shown = std::make_unique<Progress>(path, size, progress && size > 0);
    Progress* p = shown->get();
    Status s = file_.Read(
        [](void* context, uint64_t bytes) { static_cast<Progress*>(context)->SetRead(bytes); }, p);
    if (s.ok()) p->SetParsing();
    return s;
  }

  std::string_view text() const { return file_.text(); }

 private:
  ProfileFile file_;
};

}  // namespace

InputKind DetectInput(const std::string& path, std::string_view text) {
  // Binary files first, by their magic: none of them is text a reader below could take.
  if (text.starts_with("\x7f"
                       "ELF"))
    return InputKind::kElf;
  if (text.starts_with("inprof-raw")) return InputKind::kRaw;
  if (LooksLikePprof(text)) return InputKind::kPprof;
  const size_t first = text.find_first_not_of(" \t\r\n");
  // speedscope files are JSON too: told apart by their schema before any other JSON.
  if (LooksLikeSpeedscope(text)) return InputKind::kSpeedscope;
  if (first != std::string::npos && text[first] == '{') return InputKind::kAnnotationJson;
  if (LooksLikePerfReport(text)) return InputKind::kPerfReport;
  if (LooksLikePerfScript(text)) return InputKind::kPerfScript;
  // No text format has NUL bytes: whatever this is, it is not folded stacks.
  if (text.substr(0, 4096).find('\0') != std::string_view::npos) return InputKind::kBinary;
  // perf.log and folded lines look alike ("...;... 12"); perfanno's name decides.
  if (path.size() > 4 && path.ends_with(".log")) return InputKind::kPerfLog;
  return InputKind::kFolded;
}

const char* InputKindName(InputKind kind) {
  switch (kind) {
    case InputKind::kAnnotationJson:
      return "annotation JSON";
    case InputKind::kPerfLog:
      return "perf.log";
    case InputKind::kPerfScript:
      return "perf script output";
    case InputKind::kPerfReport:
      return "perf report output";
    case InputKind::kSpeedscope:
      return "a speedscope profile";
    case InputKind::kPprof:
      return "a pprof profile";
    case InputKind::kRaw:
      return "a raw profile";
    case InputKind::kElf:
      return "an ELF file";
    case InputKind::kBinary:
      return "binary data";
    default:
      return "folded stacks";
  }
}

const char* NoLinesHint(InputKind kind) {
  switch (kind) {
    case InputKind::kPerfScript:
      return "perf script output has source lines with `perf script -F +srcline "
             "--full-source-path`";
    case InputKind::kPerfReport:
      return "perf report output has source lines with `-g folded,0,caller,srcline,count`";
    case InputKind::kPprof:
      return "this pprof profile has no line numbers (it was not symbolized with them)";
    case InputKind::kSpeedscope:
      return "this speedscope profile's frames have no file and line";
    case InputKind::kPerfLog:
      return "perf.log frames need '/path:LINE'";
    default:
      return "folded stacks need frames written as 'function (file:line)'";
  }
}

namespace {

// Where a user gets what a filter needs (docs/viewer.md, "Time, threads and labels").
constexpr const char* kTimedInputs = "perf script output and *.speedscope.json profiles";

// "--from/--to need the time of each sample" (and the like for --thread) when `filter` asks
// for what `profile` lacks; "" when it has all of it.
std::string Unanswerable(const ProfileFilter& filter, InputKind kind, const Profile& profile) {
  const bool times = (filter.from_ns || filter.to_ns) && profile.timeline.empty();
  bool has_threads = !profile.threads.empty();
  for (const Sample& s : profile.samples) has_threads = has_threads || s.tid != 0;
  const bool threads = !filter.threads.empty() && !has_threads;
  if (times && threads) {
    return "--from/--to and --thread need the time and thread of each sample, but this is " +
           std::string(InputKindName(kind)) + " (no sample times, no threads)";
  }
  if (times) {
    return "--from/--to need the time of each sample, but this is " +
           std::string(InputKindName(kind)) + " (no sample times)";
  }
  if (threads) {
    return "--thread needs the thread of each sample, but this is " +
           std::string(InputKindName(kind)) + " (no threads)";
  }
  return {};
}

// Keeps the samples `filter` selects, or says why it cannot (FilterProfile's errors, prefixed
// with the path, or what the input lacks and which inputs have it).
Status ApplyFilter(const std::string& path, InputKind kind, const ProfileFilter& filter,
                   Profile* profile) {
  if (filter.empty()) return Status::Ok();
  if (const std::string what = Unanswerable(filter, kind, *profile); !what.empty()) {
    return Status::InvalidArgument(path + ": " + what + "; " + kTimedInputs + " have them");
  }
  if (!filter.labels.empty() && profile->label_sets.empty() && kind != InputKind::kSpeedscope) {
    return Status::InvalidArgument(path + ": --label needs labels on the samples, but this is " +
                                   InputKindName(kind) +
                                   " (no labels); *.speedscope.json profiles inprof writes "
                                   "have them (set with inprof_label_set)");
  }
  int64_t first = 0, last = 0;
  if (!profile->timeline.empty()) {
    first = profile->timeline.front().time_ns;
    last = profile->timeline.back().time_ns;
  }
  Profile filtered;
  if (Status s = FilterProfile(*profile, filter, &filtered); !s.ok()) {
    return Status::Error(path + ": " + s.message(), s.code());
  }
  if (filtered.samples.empty()) {
    std::string span;
    if (!profile->timeline.empty()) {
      span =
          " (its samples are from " + FormatSeconds(first) + " s to " + FormatSeconds(last) + " s)";
    }
    return Status::NotFound(path + ": no sample is selected by " + FilterArguments(filter) + span);
  }
  *profile = std::move(filtered);
  return Status::Ok();
}

// Files the viewer recognises and does not read, with what to do instead.
Status Refuse(const std::string& path, InputKind kind) {
  switch (kind) {
    case InputKind::kRaw:
      return Status::InvalidArgument(
          path +
          ": a raw profile (addresses not yet turned into functions and lines); "
          "`inprof symbolize-profile " +
          ShellQuote(path) +
          " -o DIR` writes the profiles the viewer reads (DIR/profile.json, DIR/profile.pb.gz, "
          "...)");
    case InputKind::kElf:
      return Status::InvalidArgument(
          path +
          ": an ELF file (a program or library), not a profile; profile it with "
          "`inprof record -- " +
          ShellQuote(path) + "` and read the files that writes");
    default:
      return Status::InvalidArgument(
          path +
          ": binary data, not a profile the viewer reads (annotation JSON, pprof, "
          "folded stacks, perf.log, perf script or perf report output, speedscope)");
  }
}

Status ParseStacks(const std::string& path, InputKind kind, std::string_view text, Profile* out) {
  Status s;
  switch (kind) {
    case InputKind::kRaw:
    case InputKind::kElf:
    case InputKind::kBinary:
      return Refuse(path, kind);
    case InputKind::kPprof:
      s = ReadPprof(text, path, out, MaxProfileBytes());
      break;
    case InputKind::kSpeedscope:
      s = ReadSpeedscope(text, path, out);
      break;
    case InputKind::kPerfScript:
      s = ReadPerfScript(text, path, out);
      break;
    case InputKind::kPerfReport:
      s = ReadPerfReport(text, path, out);
      break;
    case InputKind::kPerfLog:
      s = ReadPerfLog(text, path, out);
      break;
    default:
      s = ReadFolded(text, path, out);
      break;
  }
  // Every refusal says what the file was read as: a file taken for folded stacks was
  // recognised as nothing else.
  if (!s.ok()) {
    return Status::Error(
        s.message() + (kind == InputKind::kFolded
                           ? " (read as folded stacks: nothing in it looked "
                             "like another format the viewer reads)"
                           : " (read as " + std::string(InputKindName(kind)) + ")"),
        s.code());
  }
  if (out->samples.empty()) {
    return Status::Error(path + (kind == InputKind::kPprof
                                     ? ": the pprof profile has no samples"
                                     : ":1: expected at least one stack (the file is empty)"));
  }
  return Status::Ok();
}

}  // namespace

Status LoadInput(const std::string& path, bool progress, Input* out, bool annotate,
                 const ProfileFilter& filter) {
  FileText file;
  std::unique_ptr<Progress> shown;
  if (Status s = file.Open(path, progress, &shown); !s.ok()) return s;
  std::string_view text = file.text();
  out->kind = DetectInput(path, text);
  // Gzip is decompressed here, once (bounded like the file): pprof is read from what it
  // holds, and a gzipped file of another kind (out.folded.gz) is read as that kind.
  std::string inflated;
  if (out->kind == InputKind::kPprof && IsGzip(text)) {
    if (Status s = Gunzip(text, path, MaxProfileBytes(), &inflated); !s.ok()) return s;
    text = inflated;
    if (!LooksLikePprof(text)) {
      std::string inner = path;
      if (inner.ends_with(".gz")) inner.resize(inner.size() - 3);
      out->kind = DetectInput(inner, text);
      if (out->kind == InputKind::kPprof) out->kind = InputKind::kBinary;
    }
  }
  if (out->kind == InputKind::kAnnotationJson) {
    out->has_stacks = false;
    if (!filter.hide.empty()) {
      // Per-line totals cannot say which caller a hidden line's self weight belongs to (its
      // call edges are inclusive sums, not stacks): refused, never guessed.
      ProfileFilter hide;
      hide.hide = filter.hide;
      return Status::InvalidArgument(
          path + ": annotation JSON keeps totals per source line, not stacks, so " +
          FilterArguments(hide) +
          " cannot move a hidden frame's weight to its caller; read a profile with stacks "
          "instead: pprof (INPROF_OUTPUT=profile.pb.gz; `inprof record` writes profile.pb.gz "
          "beside profile.json), folded stacks, perf.log, perf script or speedscope");
    }
    if (!filter.empty()) {
      return Status::InvalidArgument(
          path + ": annotation JSON keeps totals per source line, not samples, so " +
          FilterArguments(filter) + " cannot select from it; " + kTimedInputs +
          " keep each sample's time and thread");
    }
    return ReadAnnotationJson(text, path, &out->annotations);
  }
  out->has_stacks = true;
  if (Status s = ParseStacks(path, out->kind, text, &out->profile); !s.ok()) return s;
  if (Status s = ApplyFilter(path, out->kind, filter, &out->profile); !s.ok()) return s;
  if (annotate) out->annotations = BuildAnnotations(out->profile);
  return Status::Ok();
}

Status LoadAnnotations(const std::string& path, Annotations* out, bool progress,
                       const ProfileFilter& filter) {
  Input input;
  if (Status s = LoadInput(path, progress, &input, true, filter); !s.ok()) return s;
  *out = std::move(input.annotations);
  return Status::Ok();
}

std::vector<OptionSpec> FilterOptionSpecs(ProfileFilter* f) {
  return {
      {{"--from"},
       "a time since the start (seconds: 1.5, 1.5s, 300ms)",
       [f](const std::string& text) {
         int64_t ns = 0;
         if (!ParseTime(text, &ns)) return false;
         f->from_ns = ns;
         return true;
       }},
      {{"--to"},
       "a time since the start (seconds: 1.5, 1.5s, 300ms)",
       [f](const std::string& text) {
         int64_t ns = 0;
         if (!ParseTime(text, &ns)) return false;
         f->to_ns = ns;
         return true;
       }},
      {{"--thread"},
       "a thread name or tid",
       [f](const std::string& text) {
         if (text.empty()) return false;
         f->threads.push_back(text);
         return true;
       }},
      {{"--label"},
       "KEY=VALUE",
       [f](const std::string& text) {
         const size_t eq = text.find('=');
         if (eq == std::string::npos || eq == 0) return false;
         f->labels.push_back({text.substr(0, eq), text.substr(eq + 1)});
         return true;
       }},
      // Checked by CheckFilter, which can say what is wrong with the expression. An empty one
      // would match every frame: surely not what was meant. A pattern is matched against the
      // name as --full-names shows it and as top shows it by default, so that '^std::' hides
      // function templates, whose full names start with their return type, too.
      {{"--hide"},
       "a regular expression (a function name to hide)",
       [f](const std::string& text) {
         if (text.empty()) return false;
         f->hide.push_back(text);
         f->short_name = [](std::string_view name) { return ShortFunctionName(name); };
         return true;
       }},
  };
}

std::string CheckFilter(const ProfileFilter& f) {
  if (f.from_ns && f.to_ns && *f.from_ns >= *f.to_ns) {
    return "--from " + FormatSeconds(*f.from_ns) + " is not before --to " +
           FormatSeconds(*f.to_ns) + " (both are seconds since the start)";
  }
  for (const std::string& pattern : f.hide) {
    if (Status s = CheckHidePattern(pattern); !s.ok()) {
      return "--hide " + s.message() + " (ECMAScript syntax, as in JavaScript)";
    }
  }
  return {};
}

std::string ShellQuote(const std::string& text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("-_./=:,+@%").find(c) != std::string_view::npos;
  });
  if (plain) return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string FilterArguments(const ProfileFilter& f) {
  std::string args;
  auto add = [&](const char* option, const std::string& value) {
    args += (args.empty() ? "" : " ") + std::string(option) + " " + ShellQuote(value);
  };
  if (f.from_ns) add("--from", FormatSeconds(*f.from_ns));
  if (f.to_ns) add("--to", FormatSeconds(*f.to_ns));
  for (const std::string& thread : f.threads) add("--thread", thread);
  for (const Label& label : f.labels) add("--label", label.key + "=" + label.value);
  for (const std::string& pattern : f.hide) add("--hide", pattern);
  return args;
}

std::string FilterSummary(const ProfileFilter& f) {
  std::string text;
  if (f.from_ns || f.to_ns) {
    text = (f.from_ns ? FormatSeconds(*f.from_ns) : "0") + "-" +
           (f.to_ns ? FormatSeconds(*f.to_ns) : "end") + " s";
  }
  for (size_t i = 0; i < f.threads.size(); ++i) {
    text += (text.empty() ? "" : ", ") +
            std::string(i                      ? ""
                        : f.threads.size() > 1 ? "threads "
                                               : "thread ") +
            f.threads[i];
  }
  for (const Label& label : f.labels)
    text += (text.empty() ? "" : ", ") + label.key + "=" + label.value;
  for (size_t i = 0; i < f.hide.size(); ++i) {
    text += (text.empty() ? "" : ", ") + std::string(i ? "" : "hiding ") + f.hide[i];
  }
  return text;
}

void RemapPaths(const std::vector<std::pair<std::string, std::string>>& maps, Annotations& a) {
  if (maps.empty()) return;
  auto remap = [&](std::string& path) {
    for (const auto& [from, to] : maps) {
      if (path.starts_with(from)) {
        path = to + path.substr(from.size());
        return;
      }
    }
  };
  for (FileStats& file : a.files) {
    remap(file.path);
    for (FunctionStats& fn : file.functions) remap(fn.file);
  }
}

StatusOr<size_t> FindEvent(const Annotations& a, const std::string& name) {
  if (a.events.empty()) return Status::NotFound("the profile has no events");
  if (name.empty()) return size_t{0};
  std::string known;
  for (size_t i = 0; i < a.events.size(); ++i) {
    if (a.events[i].name == name) return i;
    known += (i ? ", " : "") + a.events[i].name;
  }
  return Status::NotFound("no event '" + name + "' in the profile (it has: " + known + ")");
}

}  // namespace inprof::viewer
