// `inprof addr2line` (a drop-in for binutils addr2line) and `inprof symbolize` (the same
// lookups as JSON lines), and the address input they share.
#ifndef INPROF_VIEWER_ADDR2LINE_H_
#define INPROF_VIEWER_ADDR2LINE_H_

#include <cstddef>
#include <cstdio>
#include <string>

namespace inprof::viewer {

// `argv[0]` is the command's own name ("addr2line" or "symbolize"). Return the exit code.
int Addr2lineMain(int argc, char** argv);
int SymbolizeMain(int argc, char** argv);

// Reads addresses from a file descriptor as binutils addr2line does (fgets into a 100-byte
// buffer: at most 99 characters per read, a longer line is several reads), and flushes the
// output before every read that could block, so that a program driving us through pipes
// (perf) gets each answer as soon as it sent the question, while a file of 100k addresses
// is still answered with a few large writes. Not thread-safe.
class AddressReader {
 public:
  AddressReader(int fd, FILE* out) : fd_(fd), out_(out) {}
  // The next chunk (up to 99 characters, ending after '\n' if one came first); false at
  // end of input or on a read error.
  bool Next(std::string* chunk);

 private:
  int fd_;
  FILE* out_;
  char buffer_[1 << 16];
  size_t begin_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
};

// strtoul(text, nullptr, 16), as bfd_scan_vma does on 64-bit hosts: optional "0x", leading
// space and sign accepted, 0 for text that is not a number.
unsigned long long ParseAddress(const char* text);

}  // namespace inprof::viewer

#endif  // INPROF_VIEWER_ADDR2LINE_H_
