#include "symbolizer_outputs.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <utility>

#include "test_util.h"

namespace inprof_test {
namespace {

bool AllDigits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// "file:line", "file:line (discriminator N)", "file:?" or, LLVM style, "file:line:column".
void ParseLocation(std::string text, bool llvm_style, ToolFrame* frame) {
  const size_t discriminator = text.find(" (discriminator ");
  if (discriminator != std::string::npos) text.resize(discriminator);
  if (llvm_style) {
    const size_t colon = text.rfind(':');
    if (colon != std::string::npos && AllDigits(text.substr(colon + 1))) text.resize(colon);
  }
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    frame->file = text;
    return;
  }
  frame->file = text.substr(0, colon);
  const std::string line = text.substr(colon + 1);
  frame->line = AllDigits(line) ? static_cast<uint32_t>(std::stoul(line)) : 0;
}

std::string StripCloneSuffixes(std::string name) {
  for (;;) {
    if (name.size() > 2 && name.back() == ']') {
      const size_t open = name.rfind(" [clone .");
      if (open == std::string::npos) return name;
      name.resize(open);
    } else if (name.size() > 2 && name.back() == ')') {
      const size_t open = name.rfind(" (.");
      if (open == std::string::npos || name.find(')', open) != name.size() - 1) return name;
      name.resize(open);
    } else {
      return name;
    }
  }
}

}  // namespace

std::vector<ToolAnswer> ParseAnswers(const std::string& output, bool llvm_style) {
  std::vector<ToolAnswer> answers;
  std::istringstream in(output);
  std::string line;
  std::string pending_function;
  bool have_function = false;
  while (std::getline(in, line)) {
    if (line.empty()) {
      if (!answers.empty()) answers.back().text += "\n";
      continue;
    }
    if (line.rfind("0x", 0) == 0 && line.find(' ') == std::string::npos && !have_function) {
      ToolAnswer& answer = answers.emplace_back();
      answer.address = std::strtoull(line.c_str(), nullptr, 16);
      answer.text = line + "\n";
      continue;
    }
    if (answers.empty()) continue;
    answers.back().text += line + "\n";
    if (!have_function) {
      pending_function = line;
      have_function = true;
      continue;
    }
    ToolFrame& frame = answers.back().frames.emplace_back();
    frame.function = pending_function;
    ParseLocation(line, llvm_style, &frame);
    have_function = false;
  }
  return answers;
}

namespace {

std::string ChainSummary(const ToolAnswer& answer) {
  std::string summary;
  for (const ToolFrame& frame : answer.frames) {
    const size_t slash = frame.file.rfind('/');
    if (frame.line == 0) {
      summary += "??";  // "??:0", ":?" and "file:?" all say: no line
    } else {
      summary += slash == std::string::npos ? frame.file : frame.file.substr(slash + 1);
    }
    summary += ":" + std::to_string(frame.line) + " | ";
  }
  return summary;
}

std::string OutermostFunction(const ToolAnswer& answer) {
  return answer.frames.empty() ? "??" : StripCloneSuffixes(answer.frames.back().function);
}

}  // namespace

void SymbolAliases::Load(const std::string& elf_path) {
  bool ok = false;
  std::istringstream table(RunCommand("LC_ALL=C readelf -sW '" + elf_path + "' 2>/dev/null", &ok));
  std::string line;
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string num, value, size, type, bind, vis, ndx, name;
    if (!(fields >> num >> value >> size >> type >> bind >> vis >> ndx >> name)) continue;
    if (type != "FUNC" && type != "IFUNC" && type != "NOTYPE") continue;
    if (const size_t at = name.find('@'); at != std::string::npos && at != 0) name.resize(at);
    addresses_[name].push_back(std::strtoull(value.c_str(), nullptr, 16));
  }
}

bool SymbolAliases::Same(const std::string& a, const std::string& b) const {
  const auto x = addresses_.find(a);
  const auto y = addresses_.find(b);
  if (x == addresses_.end() || y == addresses_.end()) return false;
  for (uint64_t address : x->second) {
    for (uint64_t other : y->second) {
      if (address == other) return true;
    }
  }
  return false;
}

std::string Summary(const ToolAnswer& answer) {
  return ChainSummary(answer) + OutermostFunction(answer);
}

bool SameSummary(const ToolAnswer& a, const ToolAnswer& b, const SymbolAliases& aliases) {
  if (ChainSummary(a) != ChainSummary(b)) return false;
  const std::string x = OutermostFunction(a);
  const std::string y = OutermostFunction(b);
  return x == y || aliases.Same(x, y);
}

bool SameFiles(const ToolAnswer& a, const ToolAnswer& b) {
  if (a.frames.size() != b.frames.size()) return false;
  for (size_t i = 0; i < a.frames.size(); ++i) {
    if (a.frames[i].line != 0 && a.frames[i].file != b.frames[i].file) return false;
  }
  return true;
}

std::vector<uint64_t> RandomCodeAddresses(const std::string& elf_path, size_t count,
                                          uint64_t seed) {
  std::vector<std::pair<uint64_t, uint64_t>> sections;  // begin, size
  elf_version(EV_CURRENT);
  const int fd = open(elf_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  if (Elf* elf = elf_begin(fd, ELF_C_READ, nullptr)) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) != nullptr && (shdr.sh_flags & SHF_ALLOC) != 0 &&
          (shdr.sh_flags & SHF_EXECINSTR) != 0 && shdr.sh_size > 0) {
        sections.emplace_back(shdr.sh_addr, shdr.sh_size);
      }
    }
    elf_end(elf);
  }
  close(fd);
  uint64_t total = 0;
  for (const auto& section : sections) total += section.second;
  std::vector<uint64_t> addresses;
  if (total == 0) return addresses;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint64_t> pick(0, total - 1);
  for (size_t i = 0; i < count; ++i) {
    uint64_t offset = pick(rng);
    for (const auto& [begin, size] : sections) {
      if (offset < size) {
        addresses.push_back(begin + offset);
        break;
      }
      offset -= size;
    }
  }
  return addresses;
}

std::string WriteAddressFile(const std::vector<uint64_t>& addresses) {
  char name[] = "/tmp/inprof-addresses-XXXXXX";
  const int fd = mkstemp(name);
  if (fd < 0) return {};
  FILE* out = fdopen(fd, "w");
  for (uint64_t address : addresses) std::fprintf(out, "0x%llx\n", (unsigned long long)address);
  std::fclose(out);
  return name;
}

std::string InprofPath() {
#ifdef INPROF_CLI_PATH
  return INPROF_CLI_PATH;
#else
  return {};
#endif
}

bool HaveProgram(const std::string& program) {
  const std::string command = "command -v " + program + " >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

}  // namespace inprof_test
