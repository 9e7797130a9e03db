#include "regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace inprof::internal {
namespace {

const char* FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return nullptr;
}

}  // namespace

StatusOr<int> OpenRegularFile(const char* path) {
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return Status::Error(std::strerror(err),
                         err == ENOENT ? StatusCode::kNotFound : StatusCode::kIo);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int saved = errno;
    const bool stat_failed = st.st_mode == 0;
    close(fd);
    if (stat_failed) return Status::Io(std::strerror(saved));
    const char* kind = FileKind(st.st_mode);
    return Status::InvalidArgument(kind ? std::string("not a regular file (") + kind + ")"
                                        : std::string("not a regular file"));
  }
  return fd;
}

}  // namespace inprof::internal
