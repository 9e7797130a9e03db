// Loading a profile file of any supported kind into the annotation model.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

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

  Status Open(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::Error("cannot read " + path + ": " + std::strerror(errno));
    Status s = Load(fd, path);
    close(fd);
    return s;
  }
  std::string_view text() const {
    return map_ ? std::string_view(static_cast<const char*>(map_), map_size_) : read_;
  }

 private:
  Status Load(int fd, const std::string& path) {
    struct stat st {};
    if (fstat(fd, &st) != 0) return Error(path);
    if (S_ISDIR(st.st_mode)) return Status::Error("cannot read " + path + ": it is a directory");
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
      void* map = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ,
                       MAP_PRIVATE | MAP_POPULATE, fd, 0);
      if (map != MAP_FAILED) {
        map_ = map;
        map_size_ = static_cast<size_t>(st.st_size);
        madvise(map_, map_size_, MADV_SEQUENTIAL);
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

Status LoadAnnotations(const std::string& path, Annotations* out) {
  FileText file;
  if (Status s = file.Open(path); !s.ok()) return s;
  const std::string_view text = file.text();
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    return ReadAnnotationJson(text, path, out);
  }
  Profile profile;
  const bool perf_log = path.size() > 4 && path.ends_with(".log");
  Status s = perf_log ? ReadPerfLog(text, path, &profile) : ReadFolded(text, path, &profile);
  if (!s.ok()) return s;
  if (profile.samples.empty()) {
    return Status::Error(path + ":1: expected at least one stack (the file is empty)");
  }
  *out = BuildAnnotations(profile);
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
