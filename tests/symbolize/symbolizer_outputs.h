// Parsing and comparing what addr2line-like tools print, for the differential and
// exact-format tests of `inprof addr2line`: binutils addr2line, llvm-symbolizer and ours.
#ifndef INPROF_TESTS_SYMBOLIZE_SYMBOLIZER_OUTPUTS_H_
#define INPROF_TESTS_SYMBOLIZE_SYMBOLIZER_OUTPUTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace inprof_test {

struct ToolFrame {
  std::string function;  // "??" when unknown
  std::string file;      // "??" when unknown
  uint32_t line = 0;     // 0 when unknown ("?" or "0")
};

struct ToolAnswer {
  uint64_t address = 0;
  std::string text;               // the tool's exact output for this address
  std::vector<ToolFrame> frames;  // innermost first
};

// Splits `-a -f -i` output (binutils, inprof) or `--addresses --functions --inlines`
// output (llvm-symbolizer, LLVM style: "file:line:column", blank line after each address)
// into one answer per address.
std::vector<ToolAnswer> ParseAnswers(const std::string& output, bool llvm_style);

// Names of the ELF symbols at each address of a file and of its separate debug file, read
// with `readelf -sW` (independently of the code under test): the tools pick different
// names among aliases (__lutimes / lutimes, __GI_x / x, versioned names).
class SymbolAliases {
 public:
  void Load(const std::string& elf_path);
  // True when both names are symbols and share an address.
  bool Same(const std::string& a, const std::string& b) const;

 private:
  std::map<std::string, std::vector<uint64_t>> addresses_;
};

// What the differential test compares: basename:line of every frame of the inline chain,
// innermost first ("??:0" when the line is unknown), then the outermost function without
// clone suffixes (" [clone .cold]", " (.isra.0)", which the tools spell differently or
// leave out).
std::string Summary(const ToolAnswer& answer);

// Summary(a) == Summary(b), or the same except for outermost names that are aliases.
bool SameSummary(const ToolAnswer& a, const ToolAnswer& b, const SymbolAliases& aliases);

// The full file names of the frames with a line are the same (not only their basenames).
bool SameFiles(const ToolAnswer& a, const ToolAnswer& b);

// `count` addresses drawn uniformly (fixed seed) from the executable sections of `elf`.
std::vector<uint64_t> RandomCodeAddresses(const std::string& elf, size_t count, uint64_t seed);

// Writes one "0x%x" address per line to a new temporary file and returns its name.
std::string WriteAddressFile(const std::vector<uint64_t>& addresses);

// The `inprof` binary under test, or "" (INPROF_CLI_PATH is set by the build).
std::string InprofPath();

// True when `program` is found on PATH.
bool HaveProgram(const std::string& program);

}  // namespace inprof_test

#endif  // INPROF_TESTS_SYMBOLIZE_SYMBOLIZER_OUTPUTS_H_
