// `inprof convert IN -o OUT`: a profile from one format into another.
//
// Stacks (folded, perf.log, perf script, perf report) can become any format the exporters
// write, chosen by OUT's name through FormatFromPath and written atomically by
// WriteProfileFile, so a format the exporters learn is available here without a change.
// Annotation JSON holds per-line totals and line pairs, not stacks: it can only be rewritten
// as annotation JSON.
#include <ostream>
#include <sstream>
#include <string>

#include "inprof/annotation_json.h"
#include "inprof/atomic_write.h"
#include "inprof/formats.h"
#include "viewer.h"

namespace inprof::viewer {
namespace {

constexpr int kBadInput = 1;
constexpr int kUsage = 2;

const char* FormatName(Format format) {
  switch (format) {
    case Format::kFolded:
      return "folded stacks";
    case Format::kPerfLog:
      return "perf.log";
    case Format::kAnnotationJson:
      return "annotation JSON";
    case Format::kFlameSvg:
      return "a flame graph";
    case Format::kPprof:
      return "pprof";
    case Format::kSpeedscope:
      return "speedscope";
    case Format::kRaw:
      return "a raw profile";
    default:
      return "this format";
  }
}

}  // namespace

int RunConvert(const ConvertOptions& o, std::ostream& out, std::ostream& err) {
  (void)out;
  const std::optional<Format> format = FormatFromPath(o.output);
  if (!format) {
    err << "inprof: convert: cannot tell the output format from the name '" << o.output
        << "' (use a name ending in .folded, .log, .json, .speedscope.json, .svg or .pb.gz)\n";
    return kUsage;
  }
  if (*format == Format::kRaw) {
    err << "inprof: convert: a raw profile (.inprofraw) holds addresses before symbolization; "
           "it is written by the runtime, not from a profile (use .folded, .log, .json, "
           ".speedscope.json, .svg or .pb.gz)\n";
    return kUsage;
  }
  Input input;
  // Stacks are written as they are; only annotation JSON needs its annotations.
  if (Status s = LoadInput(o.profile, o.progress, &input, /*annotate=*/false, o.filter); !s.ok()) {
    err << "inprof: " << s.message() << '\n';
    return kBadInput;
  }
  if (!input.has_stacks) {
    if (*format != Format::kAnnotationJson) {
      err << "inprof: " << o.profile << ": annotation JSON has per-line totals but no stacks, "
          << "so it cannot become " << FormatName(*format)
          << "; convert the profile's stacks instead (folded, perf.log or perf script)\n";
      return kBadInput;
    }
    RemapPaths(o.maps, input.annotations);
    std::ostringstream text;
    WriteAnnotationJson(input.annotations, text);
    if (Status s = WriteFileAtomically(o.output, std::move(text).str()); !s.ok()) {
      err << "inprof: " << s.message() << '\n';
      return kBadInput;
    }
    return 0;
  }
  ExportOptions options;
  options.folded_lines = o.lines;
  if (!o.event.empty()) {
    Annotations events_only;
    events_only.events = input.profile.events;
    StatusOr<size_t> event = FindEvent(events_only, o.event);
    if (!event.ok()) {
      err << "inprof: " << o.profile << ": " << event.status().message() << '\n';
      return kBadInput;
    }
    options.event = *event;
  }
  for (const auto& [from, to] : o.maps) {
    for (Frame& frame : input.profile.frames) {
      if (frame.file.starts_with(from)) frame.file = to + frame.file.substr(from.size());
    }
  }
  if (*format == Format::kPerfLog) {
    bool any = false;
    // perfanno matches buffers by absolute path: frames with relative paths are left out.
    for (const Frame& frame : input.profile.frames) {
      any |= frame.has_source() && frame.file.starts_with('/');
    }
    if (!any) {
      err << "inprof: " << o.profile
          << ": no frame has an absolute /path:line, and perf.log holds only such frames; "
             "from perf, use `perf script -F +srcline --full-source-path`\n";
      return kBadInput;
    }
  }
  if (Status s = WriteProfileFile(input.profile, *format, o.output, options); !s.ok()) {
    err << "inprof: " << s.message() << '\n';
    return kBadInput;
  }
  return 0;
}

}  // namespace inprof::viewer
