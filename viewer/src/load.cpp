// Loading a profile file of any supported kind into the annotation model.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "viewer.h"

namespace inprof::viewer {

Status ReadWholeFile(const std::string& path, std::string* text) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error("cannot read " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    return Status::Error("cannot read " + path + ": it is a directory");
  }
  if (st.st_size > 0) text->reserve(static_cast<size_t>(st.st_size));
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
  }
  close(fd);
  return Status::Ok();
}

Status LoadAnnotations(const std::string& path, Annotations* out) {
  std::string text;
  if (Status s = ReadWholeFile(path, &text); !s.ok()) return s;
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
