#include "test_util.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

TempDir::TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp") + "/inprof-symbolize-test-XXXXXX";
  if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ignored;
  // Tests make directories unwritable; give them back before removing.
  for (auto it = std::filesystem::recursive_directory_iterator(path_, ignored);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ignored)) {
    if (it->is_directory(ignored)) {
      std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::add, ignored);
    }
  }
  std::filesystem::remove_all(path_, ignored);
}

std::vector<uint64_t> SpreadAddresses(const std::string& name_part, size_t count) {
  struct State {
    const std::string* part;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
  } state{&name_part, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<State*>(data);
        if (info->dlpi_name == nullptr ||
            std::strstr(info->dlpi_name, s->part->c_str()) == nullptr) {
          return 0;
        }
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
            s->ranges.emplace_back(info->dlpi_addr + ph.p_vaddr,
                                   info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
          }
        }
        return 1;
      },
      &state);
  uint64_t total = 0;
  for (const auto& [b, e] : state.ranges) total += e - b;
  std::vector<uint64_t> out;
  if (total == 0 || count == 0) return out;
  const uint64_t step = std::max<uint64_t>(total / count, 1);
  for (uint64_t x = step / 2; x < total && out.size() < count; x += step) {
    uint64_t rest = x;
    for (const auto& [b, e] : state.ranges) {
      if (rest < e - b) {
        out.push_back(b + rest);
        break;
      }
      rest -= e - b;
    }
  }
  return out;
}

bool CopyFile(const std::string& from, const std::string& to) {
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(to).parent_path(), error);
  return std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing,
                                    error);
}

LoadedCopy::LoadedCopy(const TempDir& dir, const char* fixture, const char* symbol) {
  path = dir.path() + "/lib/libinprof_copy.so";
  if (!CopyFile(fixture, path)) return;
  path = RealPath(path);
  handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return;
  auto capture = reinterpret_cast<uintptr_t (*)(int*)>(dlsym(handle, symbol));
  if (capture != nullptr) address = capture(&line) - 1;
}

LoadedCopy::~LoadedCopy() {
  if (handle != nullptr) dlclose(handle);
}

}  // namespace inprof_test
