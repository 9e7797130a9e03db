// `inprof symbolize`: FileSymbolizer's answers as JSON lines, for tools.
//
//   inprof symbolize -e FILE [--no-demangle] [ADDRESS...]   (addresses from stdin if none)
//
// One object per address, on one line, in input order:
//   {"address":"0x1139","found":true,"frames":[{"function":"f(int)","mangled":"_Z1fi",
//    "file":"/src/a.cpp","line":12,"column":7,"discriminator":0,"inlined":true}, ...]}
// frames are innermost first; the last one is the real (not inlined) function. Unknown
// values are null (function, file) or 0 (line, column). Files are named as the DWARF names
// them (not canonicalised), exactly as `inprof addr2line` prints them.
#include <getopt.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>

#include "addr2line.h"
#include "inprof/json.h"
#include "inprof/symbolize.h"

namespace inprof::viewer {
namespace {

constexpr const char* kHelp = R"(usage: inprof symbolize -e FILE [OPTIONS] [ADDRESS...]

Resolves addresses of an ELF file (its own virtual addresses, in hex) to function,
file, line, column and the inline chain, and prints one JSON object per address and line.
Addresses are read from stdin, one per line, when none are given; each answer is flushed
before more input is awaited, so the command can serve another program through pipes.

options:
  -e, --exe FILE     the executable or shared library (default a.out)
      --no-demangle  C++ names as they are in the file
  -h, --help         this text

example:
  inprof symbolize -e ./app 0x1139 0x2a40 | jq '.frames[0]'
)";

// The project's one JSON string writer: control characters escaped, bytes that are not
// UTF-8 as U+FFFD, so a name from a binary never makes the output invalid JSON.
void AppendJsonString(const std::string& text, std::string* out) {
  internal::AppendJsonString(*out, text);
}

void AppendLocation(uint64_t address, const FileLocation& location, bool demangle,
                    std::string* out) {
  char number[96];
  std::snprintf(number, sizeof number, "{\"address\":\"0x%" PRIx64 "\",\"found\":%s,\"frames\":[",
                address, location.found ? "true" : "false");
  *out += number;
  bool first = true;
  for (const FileFrame& frame : location.frames) {
    *out += first ? "{\"function\":" : ",{\"function\":";
    first = false;
    if (frame.function.empty()) {
      *out += "null,\"mangled\":null";
    } else {
      AppendJsonString(demangle ? DemangleSymbol(frame.function) : frame.function, out);
      *out += ",\"mangled\":";
      AppendJsonString(frame.function, out);
    }
    *out += ",\"file\":";
    if (!frame.has_file) {
      *out += "null";
    } else {
      AppendJsonString(frame.file, out);
    }
    std::snprintf(number, sizeof number,
                  ",\"line\":%u,\"column\":%u,\"discriminator\":%u,\"inlined\":%s}", frame.line,
                  frame.column, frame.discriminator, frame.inlined ? "true" : "false");
    *out += number;
  }
  *out += "]}\n";
}

}  // namespace

int SymbolizeMain(int argc, char** argv) {
  static const option kLongOptions[] = {{"exe", required_argument, nullptr, 'e'},
                                        {"no-demangle", no_argument, nullptr, 'N'},
                                        {"help", no_argument, nullptr, 'h'},
                                        {nullptr, 0, nullptr, 0}};
  std::string file = "a.out";
  bool demangle = true;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "e:h", kLongOptions, nullptr)) != -1) {
    switch (c) {
      case 'e':
        file = optarg;
        break;
      case 'N':
        demangle = false;
        break;
      case 'h':
        std::fputs(kHelp, stdout);
        return 0;
      default:
        std::fprintf(stderr, "inprof symbolize: unknown option '%s'\n%s", argv[optind - 1], kHelp);
        return 2;
    }
  }
  StatusOr<std::unique_ptr<FileSymbolizer>> opened = FileSymbolizer::Open(file);
  if (!opened.ok()) {
    std::fprintf(stderr, "inprof symbolize: %s\n", opened.status().message().c_str());
    return 1;
  }
  std::unique_ptr<FileSymbolizer> symbolizer = std::move(*opened);
  std::string out;
  const auto emit = [&] {
    std::fwrite(out.data(), 1, out.size(), stdout);
    out.clear();
  };
  if (optind < argc) {
    for (int i = optind; i < argc; ++i) {
      const uint64_t address = ReadAddress(argv[i], *symbolizer);
      AppendLocation(address, symbolizer->Lookup(address), demangle, &out);
      if (out.size() > (1 << 16)) emit();
    }
  } else {
    AddressReader reader(STDIN_FILENO, stdout);
    std::string chunk;
    while (reader.Next(&chunk)) {
      if (chunk.find_first_not_of(" \t\r\n") == std::string::npos) continue;  // blank line
      const uint64_t address = ReadAddress(chunk, *symbolizer);
      AppendLocation(address, symbolizer->Lookup(address), demangle, &out);
      emit();
    }
  }
  emit();
  return std::fflush(stdout) == 0 ? 0 : 1;
}

}  // namespace inprof::viewer
