// Bounded reading of profiles and source files (input_files.h).
#include "input_files.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "heat_index.h"
#include "inprof/status.h"
#include "viewer.h"

namespace inprof::viewer {
namespace {

constexpr uint64_t kDefaultMaxSourceBytes = uint64_t{64} << 20;
constexpr uint64_t kDefaultMaxProfileBytes = uint64_t{16} << 30;

uint64_t Cap(const char* variable, uint64_t fallback) {
  const char* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return fallback;
  uint64_t value = 0;
  const char* end = text + std::strlen(text);
  const auto r = std::from_chars(text, end, value);
  return r.ec == std::errc() && r.ptr == end ? value : fallback;
}

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

int OpenNonBlocking(const std::string& path) {
  int fd;
  do {
    fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

// Reads from `fd` into *out until its end or until *out holds `cap` bytes; then one more
// byte is tried, so that a file past the cap is told from one exactly at it. Returns 0, or
// errno; sets *over when there was more than `cap`.
int ReadBounded(int fd, uint64_t cap, std::string* out, bool* over,
                void (*on_read)(void*, uint64_t), void* context) {
  *over = false;
  char buffer[1 << 16];
  while (true) {
    const uint64_t room = cap - std::min<uint64_t>(cap, out->size());
    const size_t want =
        room == 0 ? 1 : static_cast<size_t>(std::min<uint64_t>(room, sizeof buffer));
    // The descriptor is non-blocking: wait for data first. On a FIFO whose writer has not
    // come yet a read would return 0, an end of file, where poll(2) waits for the writer
    // (input_files.h). A regular file is always ready.
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, -1) < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    const ssize_t n = read(fd, buffer, want);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n < 0) return errno;
    if (n == 0) return 0;
    if (room == 0) {
      *over = true;
      return 0;
    }
    out->append(buffer, static_cast<size_t>(n));
    if (on_read) on_read(context, out->size());
  }
}

bool Inside(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path.size() >= root.size() && path.compare(0, root.size(), root) == 0 &&
         (path.size() == root.size() || path[root.size()] == '/');
}

}  // namespace

uint64_t MaxSourceBytes() { return Cap("INPROF_MAX_SOURCE_BYTES", kDefaultMaxSourceBytes); }
uint64_t MaxProfileBytes() { return Cap("INPROF_MAX_PROFILE_BYTES", kDefaultMaxProfileBytes); }

std::string ByteSize(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30) && bytes % (uint64_t{1} << 30) == 0) {
    return std::to_string(bytes >> 30) + " GiB";
  }
  if (bytes >= (uint64_t{1} << 20) && bytes % (uint64_t{1} << 20) == 0) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
}

ProfileFile::~ProfileFile() {
  if (map_) munmap(map_, map_size_);
  if (fd_ >= 0) close(fd_);
}

Status ProfileFile::Open(const std::string& path, bool pipes, uint64_t* size) {
  path_ = path;
  fd_ = OpenNonBlocking(path);
  if (fd_ < 0) return Status::Error("cannot read " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd_, &st) != 0)
    return Status::Error("cannot read " + path + ": " + std::strerror(errno));
  const uint64_t cap = MaxProfileBytes();
  if (S_ISREG(st.st_mode)) {
    regular_ = true;
    size_ = static_cast<uint64_t>(st.st_size);
    if (size_ > cap) {
      return Status::Error("cannot read " + path + ": it is larger than the " + ByteSize(cap) +
                           " a profile may have (INPROF_MAX_PROFILE_BYTES raises it)");
    }
  } else if (S_ISFIFO(st.st_mode) && pipes) {
    // A pipe someone named: read as any reader of a pipe reads, waiting for data and, for a
    // named FIFO, for its writer. The descriptor stays non-blocking and ReadBounded waits in
    // poll(2): a FIFO opened with O_NONBLOCK reports no hang-up until a writer has come and
    // gone, so a writer that opens it later is waited for, and one that came and went
    // before the read is not (a blocking reopen would wait for another one forever, and a
    // plain read before the writer came would see an end of file).
  } else {
    return Status::Error("cannot read " + path + ": it is " + KindOf(st.st_mode) +
                         (pipes ? ", not a file or a pipe" : ", not a regular file"));
  }
  if (size) *size = size_;
  return Status::Ok();
}

Status ProfileFile::Read(void (*on_read)(void*, uint64_t), void* context) {
  // Mapping a 100 MB annotation JSON takes a few milliseconds where reading it into a string
  // costs a copy plus zeroing 100 MB of fresh pages; the readers copy out everything they
  // keep, so the mapping only has to outlive the parse. The mapping covers the size fstat
  // saw: a file that grows later is read as it was. (A file truncated by another process
  // while mapped would raise SIGBUS; profiles are written to a temporary name and renamed,
  // which leaves an open mapping intact.)
  if (regular_ && size_ > 0) {
    void* map =
        mmap(nullptr, static_cast<size_t>(size_), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd_, 0);
    if (map != MAP_FAILED) {
      map_ = map;
      map_size_ = static_cast<size_t>(size_);
      madvise(map_, map_size_, MADV_SEQUENTIAL);
      if (on_read) on_read(context, map_size_);
      return Status::Ok();
    }
  }
  const uint64_t cap = MaxProfileBytes();
  bool over = false;
  if (const int error = ReadBounded(fd_, cap, &read_, &over, on_read, context); error != 0) {
    return Status::Error("cannot read " + path_ + ": " + std::strerror(error));
  }
  if (over) {
    return Status::Error("cannot read " + path_ + ": it gives more than the " + ByteSize(cap) +
                         " a profile may have (INPROF_MAX_PROFILE_BYTES raises it)");
  }
  return Status::Ok();
}

std::string_view ProfileFile::text() const {
  return map_ ? std::string_view(static_cast<const char*>(map_), map_size_) : read_;
}

SourceFiles::SourceFiles(const std::string& root) {
  if (root.empty()) return;
  char* real = realpath(root.c_str(), nullptr);
  if (real == nullptr) {
    root_error_ = "--root " + root + ": " + std::strerror(errno);
    return;
  }
  root_ = real;
  free(real);
  struct stat st {};
  if (stat(root_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    root_error_ = "--root " + root + ": not a directory";
  }
}

SourceFiles::Outcome SourceFiles::Read(const std::string& path, std::string* text,
                                       std::string* why) {
  std::string scratch;
  std::string& reason = why ? *why : scratch;
  reason.clear();
  text->clear();
  auto refuse = [&](Outcome kind, std::string what) {
    reason = std::move(what);
    const size_t k = static_cast<size_t>(kind);
    if (refused_[k]++ == 0) first_[k] = path;
    return kind;
  };
  std::string open_path = path;
  if (!root_.empty()) {
    const std::string absolute = NormalizePath(path, root_);
    char* real = realpath(absolute.c_str(), nullptr);
    if (real == nullptr) {
      reason = std::strerror(errno);
      return Outcome::kMissing;
    }
    open_path = real;
    free(real);
    if (!Inside(open_path, root_)) return refuse(Outcome::kOutsideRoot, "outside --root " + root_);
  }
  const int fd = OpenNonBlocking(open_path);
  if (fd < 0) {
    reason = std::strerror(errno);
    return Outcome::kMissing;
  }
  struct stat st {};
  Outcome outcome = Outcome::kRead;
  const uint64_t cap = MaxSourceBytes();
  if (fstat(fd, &st) != 0) {
    reason = std::strerror(errno);
    outcome = Outcome::kMissing;
  } else if (!S_ISREG(st.st_mode)) {
    outcome = refuse(Outcome::kNotRegular,
                     std::string("not a regular file (") + KindOf(st.st_mode) + ")");
  } else if (static_cast<uint64_t>(st.st_size) > cap) {
    outcome = refuse(Outcome::kTooLarge, "larger than the " + ByteSize(cap) +
                                             " source file limit (INPROF_MAX_SOURCE_BYTES)");
  } else {
    // A file that grows while it is read stops at the cap: what was read is shown.
    bool over = false;
    if (const int error = ReadBounded(fd, cap, text, &over, nullptr, nullptr); error != 0) {
      reason = std::strerror(error);
      text->clear();
      outcome = Outcome::kMissing;
    }
  }
  close(fd);
  return outcome;
}

size_t SourceFiles::refused(Outcome kind) const { return refused_[static_cast<size_t>(kind)]; }

std::string SourceFiles::Summary() const {
  std::string out;
  auto line = [&](Outcome kind, const std::string& what) {
    const size_t k = static_cast<size_t>(kind);
    if (refused_[k] == 0) return;
    out += "inprof: " + std::to_string(refused_[k]) + " source file" +
           (refused_[k] == 1 ? " " : "s ") + what + " (first: " + Printable(first_[k]) + ")\n";
  };
  line(Outcome::kOutsideRoot,
       std::string(refused_[4] == 1 ? "was" : "were") + " not read: outside --root " + root_);
  line(Outcome::kNotRegular,
       std::string(refused_[2] == 1 ? "was" : "were") + " not read: not regular files");
  line(Outcome::kTooLarge, std::string(refused_[3] == 1 ? "was" : "were") +
                               " not read: larger than " + ByteSize(MaxSourceBytes()));
  return out;
}

}  // namespace inprof::viewer
