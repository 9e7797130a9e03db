// Reading files whose names the viewer does not choose: profiles named on the command line,
// and source files named by a profile, which may come from anywhere (a CI job annotating a
// submitted profile reads whatever paths the submitter wrote into it).
//
// Every such file is opened with O_NONBLOCK | O_NOCTTY | O_CLOEXEC and checked with fstat(2)
// before a byte is read: opening a FIFO without O_NONBLOCK waits for a writer that may never
// come, and /dev/zero or a terminal would be read forever. Reads are bounded by a size cap
// that holds even for a file that grows while it is read.
//
//   - Source files: regular files only, at most MaxSourceBytes(); with a root, only files
//     whose realpath(3) lies inside the root's realpath.
//   - Profiles: regular files, or pipes (`cmd | inprof top /dev/stdin`, `<(zcat p.gz)`, a
//     named FIFO, whose writer is then waited for as any reader of a FIFO waits), at most
//     MaxProfileBytes(); never directories, devices or sockets.
//
// Thread-safety: none; one reader per command. Not async-signal-safe.
#ifndef INPROF_VIEWER_INPUT_FILES_H_
#define INPROF_VIEWER_INPUT_FILES_H_

#include <cstdint>
#include <string>

#include "inprof/profile.h"
#include "inprof/status.h"

namespace inprof::viewer {

// The caps, in bytes: 64 MiB for a source file, 16 GiB for a profile, unless the environment
// sets INPROF_MAX_SOURCE_BYTES or INPROF_MAX_PROFILE_BYTES (a decimal byte count).
uint64_t MaxSourceBytes();
uint64_t MaxProfileBytes();

// "64 MiB", "16 GiB", "1000 bytes": a cap as messages show it.
std::string ByteSize(uint64_t bytes);

// A profile named on the command line, read whole. Regular files are mapped; pipes are read
// until their end. Errors name the path and, for the cap, the cap and how to raise it.
// `on_read(bytes)` (may be null) is called as the bytes come, for progress.
class ProfileFile {
 public:
  ProfileFile() = default;
  ProfileFile(const ProfileFile&) = delete;
  ProfileFile& operator=(const ProfileFile&) = delete;
  ~ProfileFile();

  // `pipes`: whether a pipe may stand for the file (false for files found by listing a
  // directory, which nobody named). `size` (may be null) gets a regular file's size before
  // it is read, 0 for a pipe.
  Status Open(const std::string& path, bool pipes, uint64_t* size = nullptr);
  // Reads the opened file (Open first). `on_read` may be null.
  Status Read(void (*on_read)(void* context, uint64_t bytes), void* context);
  Status Load(const std::string& path, bool pipes = true) {
    Status s = Open(path, pipes);
    return s.ok() ? Read(nullptr, nullptr) : s;
  }

  std::string_view text() const;

 private:
  std::string path_;
  int fd_ = -1;
  bool regular_ = false;
  uint64_t size_ = 0;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  std::string read_;
};

// Source files named by a profile. Read() says why a file was not read; counts() and
// Summary() give what a command prints once at the end.
class SourceFiles {
 public:
  enum class Outcome {
    kRead,
    kMissing,      // could not be opened (errno's message in `why`)
    kNotRegular,   // a directory, FIFO, device or socket
    kTooLarge,     // over MaxSourceBytes()
    kOutsideRoot,  // its realpath is not under the root
  };

  // `root` (may be empty: no confinement) is the directory sources must lie in; relative
  // source paths are resolved against it, or against the current directory without one.
  explicit SourceFiles(const std::string& root = {});

  // Reads `path` into *text (at most MaxSourceBytes()); otherwise `*why` says, in a few
  // words after the path, why not ("outside --root /src", "not a regular file (a FIFO)").
  Outcome Read(const std::string& path, std::string* text, std::string* why = nullptr);

  bool confined() const { return !root_.empty(); }
  // Why the root could not be used ("--root /x: No such file or directory"); empty when it
  // can. A command stops on it before reading anything.
  const std::string& error() const { return root_error_; }
  const std::string& root() const { return root_; }
  // Files refused by kind (kNotRegular, kTooLarge, kOutsideRoot), and the first of them.
  size_t refused(Outcome kind) const;
  // One line per kind of refusal ("inprof: 3 source files outside --root /src were not read
  // (first: /etc/passwd)"), or nothing.
  std::string Summary() const;

 private:
  std::string root_;        // realpath of the root, or empty
  std::string root_error_;  // why the root itself could not be resolved
  size_t refused_[5] = {};
  std::string first_[5];
};

}  // namespace inprof::viewer

#endif  // INPROF_VIEWER_INPUT_FILES_H_
