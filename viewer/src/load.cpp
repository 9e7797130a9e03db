// Loading a profile file of any supported kind into the annotation model.
#include <fcntl.h>
#include <sys/mman.h>
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

// A profile file's bytes: mapped when it is a regular file, read otherwise (pipes,
// /dev/stdin). Mapping a 100 MB annotation JSON takes a few milliseconds where reading it
// into a string costs a copy plus zeroing 100 MB of fresh pages; the readers copy out
// everything they keep, so the mapping only has to outlive the parse.
// (A file truncated by another process while it is mapped would raise SIGBUS; profile files
// are written to a temporary name and renamed, which leaves an open mapping intact.)
class FileText {
 public:
  FileText() = default;
  FileText(const FileText&) = delete;
  FileText& operator=(const FileText&) = delete;
  ~FileText() {
    if (map_) munmap(map_, map_size_);
  }

  // With `progress`, a long load shows its progress on stderr through `*shown`, which the
  // caller keeps until parsing ends.
  Status Open(const std::string& path, bool progress, std::unique_ptr<Progress>* shown) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::Error("cannot read " + path + ": " + std::strerror(errno));
    Status s = Load(fd, path, progress, shown);
    close(fd);
    if (s.ok() && *shown) (*shown)->SetParsing();
    return s;
  }

  std::string_view text() const {
    return map_ ? std::string_view(static_cast<const char*>(map_), map_size_) : read_;
  }

 private:
  Status Load(int fd, const std::string& path, bool progress, std::unique_ptr<Progress>* shown) {
    struct stat st {};
    if (fstat(fd, &st) != 0) return Error(path);
    if (S_ISDIR(st.st_mode)) return Status::Error("cannot read " + path + ": it is a directory");
    *shown = std::make_unique<Progress>(path, static_cast<uint64_t>(st.st_size > 0 ? st.st_size : 0),
                                        progress && S_ISREG(st.st_mode));
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
      void* map = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ,
                       MAP_PRIVATE | MAP_POPULATE, fd, 0);
      if (map != MAP_FAILED) {
        map_ = map;
        map_size_ = static_cast<size_t>(st.st_size);
        madvise(map_, map_size_, MADV_SEQUENTIAL);
        (*shown)->SetRead(map_size_);
        return Status::Ok();
      }
    }
    char buffer[1 << 16];
    while (true) {
      const ssize_t n = read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Error(path);
      if (n == 0) return Status::Ok();
      read_.append(buffer, static_cast<size_t>(n));
      (*shown)->SetRead(read_.size());
    }
  }
  static Status Error(const std::string& path) {
    return Status::Error("cannot read " + path + ": " + std::strerror(errno));
  }

  void* map_ = nullptr;
  size_t map_size_ = 0;
  std::string read_;
};

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
  FileText file;
  std::unique_ptr<Progress> shown;
  if (Status s = file.Open(path, progress, &shown); !s.ok()) return s;
  const std::string_view text = file.text();
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
