#include "test_util.h"

#include <link.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace inprof_test {
namespace {

struct Search {
  uint64_t address;
  bool want_main;
  LoaderObject result;
};

int Visit(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  LoaderObject object;
  object.bias = info->dlpi_addr;
  object.name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uint64_t begin = info->dlpi_addr + ph.p_vaddr;
    const uint64_t end = begin + ph.p_memsz;
    if (ph.p_flags & PF_X) object.exec_ranges.emplace_back(begin, end);
    if (search->address >= begin && search->address < end) contains = true;
  }
  const bool match = search->want_main ? object.name.empty() : contains;
  if (!match) return 0;
  object.found = true;
  search->result = std::move(object);
  return 1;
}

}  // namespace

std::string RealPath(const std::string& path) {
  char* resolved = realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return {};
  std::string out(resolved);
  free(resolved);
  return out;
}

LoaderObject ObjectContaining(uint64_t address) {
  Search search{address, false, {}};
  dl_iterate_phdr(Visit, &search);
  return search.result;
}

LoaderObject MainProgram() {
  Search search{0, true, {}};
  dl_iterate_phdr(Visit, &search);
  return search.result;
}

std::string RelativeToCwd(const std::string& path) {
  std::string relative = std::filesystem::relative(path, std::filesystem::current_path()).string();
  if (relative.rfind("../", 0) != 0) relative = "./" + relative;
  return relative;
}

std::string RunCommand(const std::string& command, bool* ok, int* exit_status) {
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *ok = false;
    return output;
  }
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  const int status = pclose(pipe);
  *ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) != 127;
  if (exit_status != nullptr) *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

}  // namespace inprof_test
