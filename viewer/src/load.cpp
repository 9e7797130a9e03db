// Loading a profile file of any supported kind into the annotation model.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "progress.h"
#include "viewer.h"

namespace inprof::viewer {
namespace {

Status ReadWholeFile(const std::string& path, std::string* text, bool progress,
                     std::unique_ptr<Progress>* shown) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error("cannot read " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    return Status::Error("cannot read " + path + ": it is a directory");
  }
  if (st.st_size > 0) text->reserve(static_cast<size_t>(st.st_size));
  *shown = std::make_unique<Progress>(path, static_cast<uint64_t>(st.st_size > 0 ? st.st_size : 0),
                                      progress && S_ISREG(st.st_mode));
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return Status::Error("cannot read " + path + ": " + std::strerror(err));
    }
    if (n == 0) break;
    text->append(buffer, static_cast<size_t>(n));
    (*shown)->SetRead(text->size());
  }
  (*shown)->SetParsing();
  close(fd);
  return Status::Ok();
}

}  // namespace

InputKind DetectInput(const std::string& path, std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') return InputKind::kAnnotationJson;
  if (LooksLikePerfReport(text)) return InputKind::kPerfReport;
  if (LooksLikePerfScript(text)) return InputKind::kPerfScript;
  // perf.log and folded lines look alike ("...;... 12"); perfanno's name decides.
  if (path.size() > 4 && path.ends_with(".log")) return InputKind::kPerfLog;
  return InputKind::kFolded;
}

namespace {

Status ParseStacks(const std::string& path, InputKind kind, std::string_view text, Profile* out) {
  Status s;
  switch (kind) {
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
  if (!s.ok()) return s;
  if (out->samples.empty()) {
    return Status::Error(path + ":1: expected at least one stack (the file is empty)");
  }
  return Status::Ok();
}

}  // namespace

Status LoadInput(const std::string& path, bool progress, Input* out, bool annotate) {
  std::string text;
  std::unique_ptr<Progress> shown;
  if (Status s = ReadWholeFile(path, &text, progress, &shown); !s.ok()) return s;
  out->kind = DetectInput(path, text);
  if (out->kind == InputKind::kAnnotationJson) {
    out->has_stacks = false;
    return ReadAnnotationJson(text, path, &out->annotations);
  }
  out->has_stacks = true;
  if (Status s = ParseStacks(path, out->kind, text, &out->profile); !s.ok()) return s;
  if (annotate) out->annotations = BuildAnnotations(out->profile);
  return Status::Ok();
}

Status LoadAnnotations(const std::string& path, Annotations* out, bool progress) {
  Input input;
  if (Status s = LoadInput(path, progress, &input); !s.ok()) return s;
  *out = std::move(input.annotations);
  return Status::Ok();
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

bool FindEvent(const Annotations& a, const std::string& name, size_t* event, std::string* error) {
  if (a.events.empty()) {
    *error = "the profile has no events";
    return false;
  }
  if (name.empty()) {
    *event = 0;
    return true;
  }
  std::string known;
  for (size_t i = 0; i < a.events.size(); ++i) {
    if (a.events[i].name == name) {
      *event = i;
      return true;
    }
    known += (i ? ", " : "") + a.events[i].name;
  }
  *error = "no event '" + name + "' in the profile (it has: " + known + ")";
  return false;
}

}  // namespace inprof::viewer
