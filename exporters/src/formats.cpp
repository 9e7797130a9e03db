// Output format selection by file name, and writing a whole profile to a file.
#include <cstdio>
#include <exception>
#include <new>
#include <sstream>
#include <string>

#include "inprof/annotation_json.h"
#include "inprof/atomic_write.h"
#include "inprof/flame.h"
#include "inprof/folded.h"
#include "inprof/perf_log.h"
#include "inprof/pprof.h"
#include "inprof/speedscope.h"

namespace inprof {
namespace {

// True when `name` is `suffix` preceded by at least one character: ".folded" alone is a
// hidden file with no name, more likely a mistake than a request.
bool HasSuffix(std::string_view name, std::string_view suffix) {
  return name.size() > suffix.size() && name.ends_with(suffix);
}

}  // namespace

std::optional<Format> FormatFromPath(std::string_view path) {
  const size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  // Names are matched exactly (case-sensitively), as the tools that read them do.
  if (HasSuffix(name, ".folded")) return Format::kFolded;
  if (HasSuffix(name, ".pb.gz")) return Format::kPprof;
  // "perf.log" is perfanno's default name; "perf.<event>.log" or any other "*.log" is a
  // perf.log for another event or a file the user will point perfanno at.
  if (HasSuffix(name, ".log")) return Format::kPerfLog;
  if (HasSuffix(name, ".speedscope.json")) return Format::kSpeedscope;
  if (HasSuffix(name, ".json")) return Format::kAnnotationJson;
  if (HasSuffix(name, ".svg")) return Format::kFlameSvg;
  if (HasSuffix(name, ".inprofraw")) return Format::kRaw;
  return std::nullopt;
}

Status WriteProfileFile(const Profile& profile, Format format, const std::string& path,
                        const ExportOptions& options) {
  if (!profile.events.empty() && options.event >= profile.events.size()) {
    return Status::Error("cannot write " + path + ": event #" + std::to_string(options.event) +
                         " does not exist (the profile has " +
                         std::to_string(profile.events.size()) + " events)");
  }
  std::ostringstream text;
  try {
    switch (format) {
      case Format::kFolded:
        WriteFolded(profile, options, text);
        break;
      case Format::kPerfLog:
        WritePerfLog(profile, options, text);
        break;
      case Format::kAnnotationJson:
        // Every event goes into the one file; options.event does not apply.
        WriteAnnotationJson(profile, text);
        break;
      case Format::kFlameSvg: {
        FlameOptions flame;
        flame.event = options.event;
        std::string svg;
        if (Status s = WriteFlameSvg(profile, flame, &svg); !s.ok()) {
          return Status::Error("cannot write " + path + ": " + s.message());
        }
        return WriteFileAtomically(path, svg, options.replace, true, options.mode);
      }
      case Format::kPprof:
        // Every event goes into the one file, like the annotation JSON.
        if (!WritePprof(profile, text)) {
          return Status::Error("cannot write " + path + ": gzip failed");
        }
        break;
      case Format::kSpeedscope:
        WriteSpeedscope(profile, options, text);
        break;
      case Format::kRaw:
        // A symbolized profile no longer has the addresses and module map a raw profile
        // holds: the runtime writes raw files from its stacks (WriteRawProfile) itself.
        return Status::InvalidArgument(
            "cannot write " + path +
            ": a raw profile (.inprofraw) holds unsymbolized addresses and is written only by "
            "a profiled process (INPROF_OUTPUT=" +
            path + "); choose another format for a symbolized profile");
      default:
        return Status::Error("cannot write " + path + ": unknown output format");
    }
  } catch (const std::bad_alloc&) {
    // The runtime calls this from its collector thread; an exception there would end the
    // profiled program, so running out of memory is reported like any other failure.
    return Status::Error("cannot write " + path + ": out of memory");
  }
  if (!text) return Status::Error("cannot write " + path + ": formatting failed");
  return WriteFileAtomically(path, std::move(text).str(), options.replace, true, options.mode);
}

std::string InsertBeforeExtension(const std::string& path, const std::string& part) {
  const size_t slash = path.rfind('/');
  // Two-part extensions stay whole: profile.cpu.pb.gz, out.cpu.speedscope.json.
  const size_t dot = path.ends_with(".pb.gz")             ? path.size() - 6
                     : path.ends_with(".speedscope.json") ? path.size() - 16
                                                          : path.rfind('.');
  std::string result = path;
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot == (slash == std::string::npos ? 0 : slash + 1)) {
    result += "." + part;
  } else {
    result.insert(dot, "." + part);
  }
  return result;
}

// The escapes of an output list (INPROF_OUTPUT, output=, inprof_dump): the one place that
// knows them, so that the runtime reads exactly what inprof record writes.
size_t FindOutputListSeparator(std::string_view text, size_t from) {
  for (size_t i = from; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;  // the escaped character, whatever it is, is not a separator
    } else if (text[i] == ',') {
      return i;
    }
  }
  return std::string_view::npos;
}

namespace {
int OutputListHexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

bool UnescapeOutputListItem(std::string_view text, std::string* out) {
  out->clear();
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c != '\\' || i + 1 == text.size()) {
      *out += c;
      continue;
    }
    const char next = text[i + 1];
    if (next == ',' || next == '\\') {
      *out += next;
      ++i;
    } else if (next == 'x' && i + 3 < text.size() && OutputListHexDigit(text[i + 2]) >= 0 &&
               OutputListHexDigit(text[i + 3]) >= 0) {
      const int byte = OutputListHexDigit(text[i + 2]) * 16 + OutputListHexDigit(text[i + 3]);
      if (byte == 0) return false;
      *out += static_cast<char>(byte);
      i += 3;
    } else {
      // Any other backslash is itself, as it was before escapes existed (a path with a
      // backslash in it keeps working unless it holds one of the three escapes).
      *out += c;
    }
  }
  return true;
}

std::string EscapeOutputListItem(std::string_view path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    const char c = path[i];
    // A space at either end would be trimmed away as the list is read.
    const bool end_space = c == ' ' && (i == 0 || i + 1 == path.size());
    if (c == ',' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || end_space) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace inprof
