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

int OpenRegularFile(const char* path, std::string* problem) {
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    if (problem != nullptr) *problem = std::strerror(errno);
    return -1;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int saved = errno;
    const bool stat_failed = st.st_mode == 0;
    close(fd);
    if (problem != nullptr) {
      const char* kind = FileKind(st.st_mode);
      *problem = stat_failed ? std::string(std::strerror(saved))
                 : kind      ? std::string("not a regular file (") + kind + ")"
                             : std::string("not a regular file");
    }
    errno = stat_failed ? saved : EINVAL;
    return -1;
  }
  return fd;
}

}  // namespace inprof::internal
