// `inprof addr2line`: binutils addr2line's command line and output, byte for byte, on top of
// FileSymbolizer's indexes. `perf script -F +srcline` and `perf report --inline` drive
// addr2line through pipes (`addr2line -e DSO -a -i -f`, one address per line, then a ","
// sentinel whose answer marks the end of the inline chain); with this binary first on PATH
// as `addr2line`, they get the same text, much sooner.
//
// Output per address, as binutils 2.40 prints it:
//   [-a] "0x" + address in 16 (8 for ELF32) hex digits, then "\n" (or ": " with -p)
//   not found:  [-f] "??\n" (or "?? ")  then "??:0\n"
//   per frame, innermost first (-i: all frames; else the innermost only):
//     [-f] function ("??" if unknown; demangled with -C) then "\n" (or " at " with -p)
//     file ("??" if unknown; basename with -s) ":" line ("?" if 0)
//       [" (discriminator N)": the innermost row's, repeated on every level, as binutils does]
//     "\n"; with -p, frames after the first start with " (inlined by) ".
#include <getopt.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "addr2line.h"
#include "inprof/symbolize.h"

namespace inprof::viewer {
namespace {

constexpr const char* kHelp = R"(Usage: inprof addr2line [option(s)] [addr(s)]
 Convert addresses into line number/file name pairs.
 If no addresses are specified on the command line, they will be read from stdin
 The options are:
  -a --addresses         Show addresses
  -b --target=<bfdname>  Accepted for compatibility; ignored
  -e --exe=<executable>  Set the input file name (default is a.out)
  -i --inlines           Unwind inlined functions
  -j --section=<name>    Read section-relative offsets instead of addresses
  -p --pretty-print      Make the output easier to read for humans
  -s --basenames         Strip directory names
  -f --functions         Show function names
  -C --demangle[=style]  Demangle function names
  -R --recurse-limit     Accepted for compatibility; ignored
  -r --no-recurse-limit  Accepted for compatibility; ignored
  -h --help              Display this information
  -v --version           Display the program's version

Same output as GNU addr2line 2.40. Put a link named `addr2line` to inprof first on PATH
to make `perf script -F +srcline` and `perf report --inline` use it.
)";

struct Options {
  std::string file = "a.out";
  std::string section;
  bool addresses = false;
  bool functions = false;
  bool inlines = false;
  bool pretty = false;
  bool basenames = false;
  bool demangle = false;
};

// Decimal digits of `value` at `out`, which has room for 10; returns the end.
char* AppendDecimal(uint32_t value, char* out) {
  char digits[10];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  while (n > 0) *out++ = digits[--n];
  return out;
}

// Formatting by hand: snprintf per frame and a copy of every name were a tenth of a
// 100k-address run.
void AppendFrame(const FileFrame& frame, uint32_t discriminator, const Options& options,
                 std::string* out) {
  if (options.functions) {
    if (frame.function.empty()) {
      *out += "??";
    } else if (options.demangle) {
      *out += DemangleSymbol(frame.function);
    } else {
      *out += frame.function;
    }
    *out += options.pretty ? " at " : "\n";
  }
  if (!frame.has_file) {
    *out += "??";
  } else if (size_t slash = frame.file.rfind('/');
             options.basenames && slash != std::string::npos) {
    out->append(frame.file, slash + 1);
  } else {
    *out += frame.file;
  }
  char number[64];
  char* end = number;
  *end++ = ':';
  if (frame.line == 0) {
    *end++ = '?';
  } else {
    end = AppendDecimal(frame.line, end);
    if (discriminator != 0) {
      static constexpr char kDiscriminator[] = " (discriminator ";
      std::memcpy(end, kDiscriminator, sizeof kDiscriminator - 1);
      end += sizeof kDiscriminator - 1;
      end = AppendDecimal(discriminator, end);
      *end++ = ')';
    }
  }
  *end++ = '\n';
  out->append(number, end);
}

void Translate(FileSymbolizer& symbolizer, const Options& options, uint64_t section_begin,
               uint64_t section_end, uint64_t pc, std::string* out) {
  if (!symbolizer.is_64bit()) pc &= 0xffffffffu;  // bfd keeps the file's address width
  if (options.addresses) {
    char text[32];
    std::snprintf(text, sizeof text, symbolizer.is_64bit() ? "0x%016" PRIx64 : "0x%08" PRIx64, pc);
    *out += text;
    *out += options.pretty ? ": " : "\n";
  }
  const FileLocation* location = nullptr;
  if (options.section.empty()) {
    location = &symbolizer.Lookup(pc);
  } else if (pc < section_end - section_begin) {
    location = &symbolizer.Lookup(section_begin + pc);
  }
  if (location == nullptr || !location->found) {
    if (options.functions) *out += options.pretty ? "?? " : "??\n";
    *out += "??:0\n";
    return;
  }
  const uint32_t discriminator = location->frames.front().discriminator;
  for (size_t i = 0; i < location->frames.size(); ++i) {
    if (i > 0) {
      if (!options.inlines) break;
      if (options.pretty) *out += " (inlined by) ";
    }
    AppendFrame(location->frames[i], discriminator, options, out);
  }
}

}  // namespace

// One piece on purpose: it follows binutils addr2line's main() (getopt_long over the same
// option table, then addresses from argv or stdin, flushed per line), so that the two can be
// read side by side when a perf or editor integration disagrees about an option.
int Addr2lineMain(int argc, char** argv) {
  static const option kLongOptions[] = {{"addresses", no_argument, nullptr, 'a'},
                                        {"basenames", no_argument, nullptr, 's'},
                                        {"demangle", optional_argument, nullptr, 'C'},
                                        {"exe", required_argument, nullptr, 'e'},
                                        {"functions", no_argument, nullptr, 'f'},
                                        {"inlines", no_argument, nullptr, 'i'},
                                        {"pretty-print", no_argument, nullptr, 'p'},
                                        {"recurse-limit", no_argument, nullptr, 'R'},
                                        {"recursion-limit", no_argument, nullptr, 'R'},
                                        {"no-recurse-limit", no_argument, nullptr, 'r'},
                                        {"no-recursion-limit", no_argument, nullptr, 'r'},
                                        {"section", required_argument, nullptr, 'j'},
                                        {"target", required_argument, nullptr, 'b'},
                                        {"help", no_argument, nullptr, 'H'},
                                        {"version", no_argument, nullptr, 'V'},
                                        {nullptr, 0, nullptr, 0}};
  Options options;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "ab:Ce:rRsfHhij:pVv", kLongOptions, nullptr)) != -1) {
    switch (c) {
      case 'a':
        options.addresses = true;
        break;
      case 'b':
      case 'r':
      case 'R':
        break;
      case 'C':
        options.demangle = true;
        break;
      case 'e':
        options.file = optarg;
        break;
      case 'f':
        options.functions = true;
        break;
      case 'i':
        options.inlines = true;
        break;
      case 'j':
        options.section = optarg;
        break;
      case 'p':
        options.pretty = true;
        break;
      case 's':
        options.basenames = true;
        break;
      case 'H':
      case 'h':
        std::fputs(kHelp, stdout);
        return 0;
      case 'V':
      case 'v':
        std::puts("inprof addr2line (compatible with GNU addr2line 2.40)");
        return 0;
      default:
        std::fprintf(stderr, "%s: unrecognized option '%s'\n%s", argv[0], argv[optind - 1], kHelp);
        return 1;
    }
  }

  StatusOr<std::unique_ptr<FileSymbolizer>> opened = FileSymbolizer::Open(options.file);
  if (!opened.ok()) {
    // binutils' messages, word for word, after the name it was run by (its argv[0]).
    std::fprintf(stderr, "%s: %s\n", argv[0], opened.status().message().c_str());
    return 1;
  }
  std::unique_ptr<FileSymbolizer> symbolizer = std::move(*opened);
  uint64_t section_begin = 0;
  uint64_t section_end = 0;
  if (!options.section.empty() &&
      !symbolizer->SectionRange(options.section, &section_begin, &section_end)) {
    std::fprintf(stderr, "%s: %s: cannot find section %s\n", argv[0], options.file.c_str(),
                 options.section.c_str());
    return 1;
  }

  std::string out;
  const auto emit = [&] {
    std::fwrite(out.data(), 1, out.size(), stdout);
    out.clear();
  };
  if (optind < argc) {
    for (int i = optind; i < argc; ++i) {
      Translate(*symbolizer, options, section_begin, section_end, ReadAddress(argv[i], *symbolizer),
                &out);
      if (out.size() > (1 << 16)) emit();
    }
  } else {
    AddressReader reader(STDIN_FILENO, stdout);
    std::string chunk;
    // Answers go to stdout's buffer as they are made; the reader flushes it before it
    // could block on input.
    while (reader.Next(&chunk)) {
      Translate(*symbolizer, options, section_begin, section_end, ReadAddress(chunk, *symbolizer),
                &out);
      emit();
    }
  }
  emit();
  // The indexes are hundreds of thousands of small blocks: freeing them one by one took
  // ~10 % of a 100k-address run on libc, just before the process exits anyway. Keep them
  // reachable (so leak checkers stay quiet) and let exit release the memory.
  // volatile: the store must not be optimised away, or leak checkers see a leak.
  [[maybe_unused]] static FileSymbolizer* volatile kept_until_exit = nullptr;
  kept_until_exit = symbolizer.release();
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace inprof::viewer
