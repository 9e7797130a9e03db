// The file formats inprof writes, chosen by a path's name, and writing a profile to a file in
// one of them. One header per format beside this one (folded.h, perf_log.h, pprof.h, ...)
// holds its writer and its reader.
//
// Thread-safety: reentrant. Not async-signal-safe.
#ifndef INPROF_FORMATS_H_
#define INPROF_FORMATS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "inprof/profile.h"
#include "inprof/status.h"

namespace inprof {

enum class Format {
  kFolded,          // *.folded: flame-graph folded stacks
  kPerfLog,         // perf.log / *.log: perfanno.nvim input
  kAnnotationJson,  // *.json: per-line annotations for editors and the viewer
  kFlameSvg,        // *.svg: interactive flame graph (docs/flame-graphs.md)
  kPprof,           // *.pb.gz: gzipped profile.proto for `go tool pprof` (docs/pprof.md)
  kSpeedscope,      // *.speedscope.json: per-thread samples in time order (docs/speedscope.md)
  kRaw,             // *.inprofraw: unsymbolized addresses and module map (docs/raw-profile.md);
                    // written from a RawProfile (raw_profile.h), never from a Profile
};

// The format a path asks for, from its name; nullopt when the name is not one we write.
std::optional<Format> FormatFromPath(std::string_view path);

// Output lists (INPROF_OUTPUT, `output=` of a configuration string, inprof_dump) separate
// paths with ','. Within an item, `\,` is a comma, `\\` a backslash and `\xHH` the byte HH
// (any but 00); any other backslash is itself (docs/record.md, "Paths with commas").
//
// The position of the first ',' at or after `from` that separates items (not escaped), or
// npos.
size_t FindOutputListSeparator(std::string_view text, size_t from);
// One item (between separators) as the path it names; false for `\x00`.
bool UnescapeOutputListItem(std::string_view item, std::string* path);
// `path` as an item that UnescapeOutputListItem reads back as `path`: commas, backslashes,
// control characters and spaces at either end (an item is trimmed) escaped.
std::string EscapeOutputListItem(std::string_view path);

// `path` with ".part" inserted before its extension, as per-event, per-process and window
// files are named: out.folded -> out.cpu.folded; pprof's two-part extension stays whole
// (profile.cpu.pb.gz); a name without extension gets ".part" at its end.
std::string InsertBeforeExtension(const std::string& path, const std::string& part);

struct ExportOptions {
  size_t event = 0;            // which of Profile::events the counts come from
  bool folded_lines = false;   // folded frames as "function (file:line)" instead of names
  bool replace = true;         // false: fail (EEXIST) rather than replace an existing file
  int mode = -1;               // the file's permission bits (WriteFileAtomically); -1: umask's
  // Folded only: an extra root frame per stack: "" none, "thread" the thread's name (the tid
  // when it has none), "label:KEY" the value of label KEY ("[no KEY]" when unset).
  std::string folded_root;
};

// Writes `profile` to `path` in `format` atomically: a temporary file in the same directory,
// then rename(2). On failure nothing exists under `path` that was not there before and the
// message names the path and the reason. Not async-signal-safe.
Status WriteProfileFile(const Profile& profile, Format format, const std::string& path,
                        const ExportOptions& options = {});

}  // namespace inprof

#endif  // INPROF_FORMATS_H_
