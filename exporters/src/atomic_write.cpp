// Atomic file replacement: write a temporary file next to the target, fsync it, rename(2) it
// over the target. rename within one directory is atomic, so readers see the old file or the
// complete new one, and a crash mid-write leaves at most a stray ".name.tmp.*" file, never a
// truncated profile under the final name.
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>

#include "inprof/atomic_write.h"

namespace inprof {
namespace {

// strerror() is not thread-safe; strerror_r comes in a GNU (char*) and an XSI (int) flavour.
[[maybe_unused]] std::string ErrorText(int /*err*/, const char* buffer, int result) {
  return result == 0 ? std::string(buffer) : std::string("unknown error");
}
[[maybe_unused]] std::string ErrorText(int /*err*/, const char* /*buffer*/, const char* result) {
  return std::string(result);
}

Status ErrnoError(const std::string& path, int err) {
  char buffer[256] = {};
  const StatusCode code = err == EEXIST   ? StatusCode::kAlreadyExists
                          : err == ENOENT ? StatusCode::kNotFound
                                          : StatusCode::kIo;
  return Status::Error(
      "cannot write " + path + ": " + ErrorText(err, buffer, strerror_r(err, buffer, sizeof buffer)),
      code);
}

uint64_t RandomBits() {
  uint64_t bits = 0;
  if (getrandom(&bits, sizeof bits, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof bits)) {
    return bits;
  }
  // No entropy yet (early boot) or no getrandom: O_EXCL keeps names unique regardless, this
  // only has to make collisions unlikely.
  static std::atomic<uint64_t> counter{0};
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_nsec) * 0x9e3779b97f4a7c15ULL ^
         counter.fetch_add(1, std::memory_order_relaxed);
}

std::string TempPath(std::string_view directory_prefix, std::string_view name) {
  // Keep the temporary name under NAME_MAX (255) even when the final name is close to it.
  constexpr size_t kMaxNamePart = 200;
  char tail[64];
  std::snprintf(tail, sizeof tail, ".tmp.%ld.%016llx", static_cast<long>(getpid()),
                static_cast<unsigned long long>(RandomBits()));
  std::string temp(directory_prefix);
  temp += '.';
  temp += name.substr(0, kMaxNamePart);
  temp += tail;
  return temp;
}

bool WriteAll(int fd, std::string_view contents) {
  while (!contents.empty()) {
    const ssize_t n = write(fd, contents.data(), contents.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    contents.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Makes the rename itself durable. Best effort: the new file is complete either way.
void SyncDirectory(const std::string& directory) {
  const int fd = open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  fsync(fd);
  close(fd);
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view contents, bool replace,
                           bool durable, int mode) {
  if (mode >= 0 && (mode & ~07777) != 0) return Status::InvalidArgument("invalid file mode");
  if (path.empty()) return Status::Error("cannot write a file with an empty name");
  const size_t slash = path.rfind('/');
  const std::string_view prefix =
      slash == std::string::npos ? std::string_view() : std::string_view(path).substr(0, slash + 1);
  const std::string_view name = std::string_view(path).substr(prefix.size());
  if (name.empty() || name == "." || name == "..") return ErrnoError(path, EISDIR);

  std::string temp;
  int fd = -1;
  for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
    temp = TempPath(prefix, name);
    // Without a mode: 0666 and the umask, the permissions any newly created file would get
    // (the viewer's outputs, meant for a colleague). With one: created 0600 so that nobody
    // else can open it in the moment before fchmod sets the mode asked for.
    fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              mode < 0 ? 0666 : 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return ErrnoError(path, errno);
  // Exactly `mode`: the umask of whichever process writes (a daemon's 0, a shell's 077) must
  // not decide who may read a profile that was configured to be private or shared.
  if (mode >= 0 && fchmod(fd, static_cast<mode_t>(mode)) != 0) {
    const int err = errno;
    close(fd);
    unlink(temp.c_str());
    return ErrnoError(path, err);
  }

  // fsync before rename: otherwise a crash soon after can leave the new name pointing at an
  // empty file on some file systems (ext4 with delalloc, xfs).
  bool ok = WriteAll(fd, contents) && (!durable || fsync(fd) == 0);
  int err = ok ? 0 : errno;
  if (close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && replace && rename(temp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (ok && !replace) {
    if (renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0) {
      err = errno;
      ok = false;
      // File systems without RENAME_NOREPLACE: link(2) never replaces either.
      if (err == EINVAL || err == ENOSYS) {
        ok = link(temp.c_str(), path.c_str()) == 0;
        err = ok ? 0 : errno;
        if (ok) unlink(temp.c_str());
      }
    }
  }
  if (!ok) {
    unlink(temp.c_str());
    return ErrnoError(path, err);
  }
  if (durable) SyncDirectory(prefix.empty() ? std::string(".") : std::string(prefix));
  return Status::Ok();
}

}  // namespace inprof
