// Prints the README's table of configuration keys, made from the configuration parser's own
// table (ConfigKeysMarkdown), or checks or rewrites the part of a README between the markers:
//
//   inprof_config_keys_table                   the table on stdout
//   inprof_config_keys_table --check README.md exit 1 when the README's table differs
//   inprof_config_keys_table --write README.md replace the README's table
#include "config/config.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace {

constexpr const char* kBegin =
    "<!-- config keys: generated from sdk/src/config/config.cpp by inprof_config_keys_table "
    "(tests/sdk/config_keys_table.cpp); edit the table there -->\n";
constexpr const char* kEnd = "<!-- end of config keys -->\n";
constexpr const char* kRegenerate =
    "regenerate it with: build/tests/sdk/inprof_config_keys_table --write README.md";

int Fail(const std::string& message) {
  std::cerr << "inprof_config_keys_table: " << message << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string table = inprof::internal::ConfigKeysMarkdown();
  if (argc == 1) {
    std::cout << table;
    return 0;
  }
  if (argc != 3 || (std::strcmp(argv[1], "--check") != 0 && std::strcmp(argv[1], "--write") != 0)) {
    return Fail("usage: inprof_config_keys_table [--check|--write README.md]");
  }
  const std::string path = argv[2];
  std::ifstream in(path, std::ios::binary);
  if (!in) return Fail("cannot read " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  const size_t begin = text.find(kBegin);
  const size_t end = begin == std::string::npos ? begin : text.find(kEnd, begin);
  if (end == std::string::npos) {
    return Fail(path + ": no table between the markers '" + std::string(kBegin, std::strlen(kBegin) - 1) +
                "' and '" + std::string(kEnd, std::strlen(kEnd) - 1) + "'");
  }
  const size_t start = begin + std::strlen(kBegin);
  if (std::strcmp(argv[1], "--check") == 0) {
    if (text.compare(start, end - start, table) == 0) return 0;
    return Fail(path + ": the table of configuration keys differs from the one the parser's "
                "table in sdk/src/config/config.cpp makes; " + kRegenerate);
  }
  text.replace(start, end - start, table);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!(out << text) || !out.flush()) return Fail("cannot write " + path);
  return 0;
}
