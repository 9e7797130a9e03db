// `inprof addr2line` (a drop-in for binutils addr2line) and `inprof symbolize` (the same
// lookups as JSON lines), and the address input they share.
#ifndef INPROF_VIEWER_ADDR2LINE_H_
#define INPROF_VIEWER_ADDR2LINE_H_

#include <cstddef>
#include <cstdio>
#include <string>

#include "inprof/symbolize.h"

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

// An address as addr2line 2.40 reads it (bfd_scan_vma): leading white space, an optional
// "0x"/"0X", hex digits up to the first other character; all ones on overflow, 0 without
// digits. `*end` is set to the first character not used.
unsigned long long ParseAddress(const char* text, const char** end = nullptr);

// ParseAddress, then addr2line 2.40's "symbol" and "symbol+offset" input: when something
// other than the end of the line follows the number, the whole text (without its new line)
// is looked up as a symbol name, with a "+N" offset (decimal, or hex with "0x"); if there is
// no such symbol the number stands.
unsigned long long ReadAddress(const std::string& text, const FileSymbolizer& file);

}  // namespace inprof::viewer

#endif  // INPROF_VIEWER_ADDR2LINE_H_
