#include "internal/config.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>

namespace inprof::internal {
namespace {

// ctest sets INPROF_SOURCE_DIR for the test binaries; configuration from the environment
// must be tested without it.
class ConfigEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* v = std::getenv("INPROF_SOURCE_DIR")) saved_ = v;
    unsetenv("INPROF_SOURCE_DIR");
  }
  void TearDown() override {
    if (!saved_.empty()) setenv("INPROF_SOURCE_DIR", saved_.c_str(), 1);
  }
  std::string saved_;
};

TEST(ConfigTest, DefaultsAreTheDocumentedOnes) {
  Config c;
  EXPECT_EQ(c.frequency, 99);
  EXPECT_EQ(c.unwind, UnwindChoice::kAuto);
  EXPECT_EQ(c.engine, EngineChoice::kAuto);
  EXPECT_EQ(c.stack_bytes, 16384u);
  EXPECT_EQ(c.signal, SIGPROF);
  EXPECT_EQ(c.max_depth, 128u);
  EXPECT_FALSE(c.quiet);
}

TEST(ConfigTest, ParsesKeysAndOutputListsWithCommas) {
  Config c;
  ASSERT_TRUE(ParseConfig("output=/tmp/a.folded,/tmp/perf.log,frequency=250,quiet=1,"
                          "unwind=dwarf,stack_bytes=32K,dwarf_backend=libdwfl",
                          &c)
                  .ok());
  EXPECT_EQ(c.unwind, UnwindChoice::kDwarf);
  EXPECT_EQ(c.stack_bytes, 32768u);
  EXPECT_EQ(c.dwarf_backend, DwarfBackendChoice::kLibdwfl);
  ASSERT_EQ(c.outputs.size(), 2u);
  EXPECT_EQ(c.outputs[0], "/tmp/a.folded");
  EXPECT_EQ(c.outputs[1], "/tmp/perf.log");
  EXPECT_EQ(c.frequency, 250);
  EXPECT_TRUE(c.quiet);
}

TEST(ConfigTest, ParsesSizesSignalsAndPathMaps) {
  Config c;
  ASSERT_TRUE(
      ParseConfig("max_memory=16M,signal=SIGRTMIN+2,max_depth=32,path_map=/b=/s:/x=/y", &c).ok());
  EXPECT_EQ(c.max_memory, size_t{16} << 20);
  EXPECT_EQ(c.signal, SIGRTMIN + 2);
  EXPECT_EQ(c.max_depth, 32u);
  ASSERT_EQ(c.path_map.size(), 2u);
  EXPECT_EQ(c.path_map[1].first, "/x");
  EXPECT_EQ(c.path_map[1].second, "/y");
}

TEST(ConfigTest, ParsesNetworkOutputs) {
  Config c;
  ASSERT_TRUE(ParseConfig("http=:6060,push_url=http://pyro:4040,app_name=checkout,"
                          "labels=env=prod;region=eu,tenant=team-a",
                          &c)
                  .ok());
  EXPECT_EQ(c.http, "127.0.0.1:6060");  // loopback unless the address says otherwise
  EXPECT_EQ(c.push_url, "http://pyro:4040");
  EXPECT_EQ(c.app_name, "checkout");
  ASSERT_EQ(c.labels.size(), 2u);
  EXPECT_EQ(c.labels[1].first, "region");
  EXPECT_EQ(c.tenant, "team-a");
}

struct BadCase {
  const char* text;
  const char* message_part;
};

void PrintTo(const BadCase& bad, std::ostream* out) { *out << bad.text; }

class BadConfigTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadConfigTest, NamesTheProblem) {
  Config c;
  Status s = ParseConfig(GetParam().text, &c);
  ASSERT_FALSE(s.ok()) << GetParam().text;
  EXPECT_NE(s.message().find(GetParam().message_part), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadConfigTest,
    ::testing::Values(
        BadCase{"bogus=1", "unknown configuration key 'bogus'"},
        BadCase{"frequency=abc", "invalid frequency='abc'"},
        BadCase{"frequency=0", "invalid frequency"}, BadCase{"frequency=-5", "invalid frequency"},
        BadCase{"unwind=magic", "invalid unwind='magic'"},
        BadCase{"stack_bytes=512", "invalid stack_bytes='512'"},
        BadCase{"dwarf_backend=gdb", "invalid dwarf_backend='gdb'"},
        BadCase{"stack_bytes=2M", "invalid stack_bytes='2M'"}, BadCase{"signal=KILL", "invalid signal"},
        BadCase{"signal=SEGV", "invalid signal"}, BadCase{"max_depth=0", "invalid max_depth"},
        BadCase{"max_depth=500", "invalid max_depth"},
        BadCase{"exit_timeout=0", "invalid exit_timeout"}, BadCase{"exit_timeout=soon", "invalid exit_timeout"},
        BadCase{"max_memory=1", "invalid max_memory"},
        BadCase{"output=/tmp/x.txt", "unknown output format for '/tmp/x.txt'"},
        BadCase{"output=/nonexistent-dir/x.folded", "/nonexistent-dir"},
        BadCase{"perf.log", "expected key=value"}, BadCase{"=3", "empty key"},
        BadCase{"http=6060", "invalid http"}, BadCase{"http=example.com:80", "numeric"},
        BadCase{"push_url=https://p:4040", "https is not supported"},
        BadCase{"push_url=pyro:4040", "invalid push_url"},
        BadCase{"app_name=a b", "invalid app_name"},
        BadCase{"labels=env", "invalid labels"},
        BadCase{"labels=env=prod,region=eu", "unknown configuration key 'region'"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::to_string(info.index); });

TEST_F(ConfigEnvTest, EnvironmentUsesTheSameKeys) {
  setenv("INPROF_FREQUENCY", "123", 1);
  setenv("INPROF_OUTPUT", "/tmp/e.folded", 1);
  Config c;
  Status s = ConfigFromEnvironment(&c);
  unsetenv("INPROF_FREQUENCY");
  unsetenv("INPROF_OUTPUT");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(c.frequency, 123);
  ASSERT_EQ(c.outputs.size(), 1u);
}

TEST_F(ConfigEnvTest, LabelsFromTheEnvironmentMaySeparateWithCommas) {
  setenv("INPROF_LABELS", "env=prod,region=eu", 1);
  Config c;
  Status s = ConfigFromEnvironment(&c);
  unsetenv("INPROF_LABELS");
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(c.labels.size(), 2u);
  EXPECT_EQ(c.labels[0].second, "prod");
}

TEST_F(ConfigEnvTest, UnknownEnvironmentVariableIsAnError) {
  setenv("INPROF_FREQ", "100", 1);
  Config c;
  Status s = ConfigFromEnvironment(&c);
  unsetenv("INPROF_FREQ");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("INPROF_FREQ"), std::string::npos) << s.message();
}

TEST_F(ConfigEnvTest, BadEnvironmentValueNamesTheVariable) {
  setenv("INPROF_MAX_DEPTH", "many", 1);
  Config c;
  Status s = ConfigFromEnvironment(&c);
  unsetenv("INPROF_MAX_DEPTH");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("INPROF_MAX_DEPTH"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace inprof::internal
