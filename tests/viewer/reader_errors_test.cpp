// Every reader error, as a user meets it at the command line: "inprof: FILE:LINE: what was
// expected" on stderr (LINE inside the file), exit code 1, and nothing on stdout or on disk.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "test_util.h"

namespace inprof::test {
namespace {

struct BadInput {
  const char* name;  // the file name decides the reader for text formats
  std::string text;
};

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(ViewerReaderErrors, FileLineExpectedExitOneNothingWritten) {
  const std::string json_head = "{\"format\":\"inprof-annotations\",\n\"version\":1,\n";
  const std::vector<BadInput> inputs = {
      {"truncated.json", json_head + "\"files\":[{\"path\":\"/a.cpp\",\n\"lines\":["},
      {"syntax.json", json_head + "\"files\":[{]}\n"},
      {"version.json", "{\"format\":\"inprof-annotations\",\n\n\"version\":7}\n"},
      {"format.json", "{\"format\":\"other\",\"version\":1}"},
      {"number.json", json_head + "\"events\":[{\"name\":\"cpu\",\"frequency_hz\":nan}]}\n"},
      {"shape.json", json_head +
                         "\"events\":[{\"name\":\"cpu\"}],\n\"files\":[{\"path\":\"/a.cpp\","
                         "\"lines\":[{\"line\":3,\"self\":[1,2],\"inclusive\":[1]}]}]}\n"},
      {"edge.json", json_head + "\"events\":[{\"name\":\"cpu\"}],\n\"edges\":[{\"caller\":[4,1],"
                                "\"callee\":[0,2],\"weight\":[1]}]}\n"},
      {"trailing.json", json_head + "\"events\":[]}\n}\n"},
      {"control.json", json_head + "\"metadata\":{\"program\":\"a\nb\"}}"},
      {"deep.json", json_head + "\"x\":" + std::string(100, '[') + std::string(100, ']') + "}"},
      {"count.folded", "main;work 3\nmain;idle x\n"},
      {"empty.folded", ""},
      {"comments.folded", "# only a comment\n"},
      {"count.log", "main /src/a.cpp:3 5\nmain /src/a.cpp:4\n"},
      {"frame.log", "main /src/a.cpp:3 5\n\nmain a.cpp:4;f /b.cpp:1 2\n"},
  };
  const std::string dir = MakeTempDir();
  for (const BadInput& input : inputs) {
    const std::string path = dir + "/" + input.name;
    std::ofstream(path, std::ios::binary) << input.text;
    const size_t lines =
        static_cast<size_t>(std::count(input.text.begin(), input.text.end(), '\n')) + 1;
    const std::regex form("inprof: " + path + ":([0-9]+): expected [^\n]+\n");
    for (const char* command : {"top", "annotate", "heat"}) {
      const ProcessResult r = RunProcess({INPROF_VIEWER, command, path}, {});
      EXPECT_EQ(r.exit_code, 1) << command << ' ' << input.name << ": " << r.err;
      std::smatch m;
      ASSERT_TRUE(std::regex_match(r.err, m, form))
          << command << ' ' << input.name << ": " << r.err;
      const size_t line = std::stoul(m[1]);
      EXPECT_GE(line, 1u) << r.err;
      EXPECT_LE(line, lines) << r.err;
      EXPECT_EQ(r.out, "") << command << ' ' << input.name;
    }
  }
  // No temporary or partial files next to the inputs.
  std::vector<std::string> expected;
  for (const BadInput& input : inputs) expected.push_back(input.name);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(Entries(dir), expected);
}

}  // namespace
}  // namespace inprof::test
