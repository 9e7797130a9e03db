#include "config/config.h"

#include <gtest/gtest.h>

#include <dirent.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "inprof/folded.h"
#include "test_util.h"

// The fuzz target's checks (fuzz/config_fuzz.cpp, compiled into this test).
namespace inprof::fuzz {
std::string CheckConfig(std::string_view input);
}

namespace inprof::internal {
namespace {

bool HasControlForTest(const std::string& text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return false;
}

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
        BadCase{"stack_bytes=2M", "invalid stack_bytes='2M'"},
        BadCase{"signal=KILL", "invalid signal"}, BadCase{"signal=SEGV", "invalid signal"},
        BadCase{"max_depth=0", "invalid max_depth"}, BadCase{"max_depth=500", "invalid max_depth"},
        BadCase{"exit_timeout=0", "invalid exit_timeout"},
        BadCase{"exit_timeout=soon", "invalid exit_timeout"},
        BadCase{"max_memory=1", "invalid max_memory"},
        BadCase{"output=/tmp/x.txt", "unknown output format for '/tmp/x.txt'"},
        BadCase{"output=/nonexistent-dir/x.folded", "/nonexistent-dir"},
        BadCase{"perf.log", "expected key=value"}, BadCase{"=3", "empty key"},
        BadCase{"http=6060", "invalid http"}, BadCase{"http=example.com:80", "numeric"},
        BadCase{"push_url=https://p:4040", "https is not supported"},
        BadCase{"push_url=pyro:4040", "invalid push_url"},
        BadCase{"app_name=a b", "invalid app_name"}, BadCase{"labels=env", "invalid labels"},
        BadCase{"labels=env=prod,region=eu", "unknown configuration key 'region'"},
        // Values that parse but would do harm: numbers past their text, paths a line-based
        // tool or a log would misread, lists without end, signals glibc or the shell own.
        BadCase{"frequency=inf", "invalid frequency"},
        BadCase{"frequency=nan", "invalid frequency"}, BadCase{"window=1e999", "invalid window"},
        BadCase{"output=/tmp/a\nb.folded", "invalid output: output '/tmp/a\\x0ab.folded'"},
        BadCase{"output=/tmp/\x1b[2J.folded", "without control characters"},
        BadCase{"output=/tmp/a.folded,/tmp/a.folded", "listed twice"},
        BadCase{"output=.folded", "invalid output"},
        BadCase{"symbol_cache=/tmp/c\r", "invalid symbol_cache"},
        BadCase{"path_map=/b\t=/s", "invalid path_map"}, BadCase{"tenant=a\x7f", "invalid tenant"},
        BadCase{"labels=env=a\x01b", "invalid labels"},
        BadCase{"push_url=http://p:4040/\x01", "invalid push_url"},
        BadCase{"app_name=a\tb", "invalid app_name"}, BadCase{"signal=32", "invalid signal"},
        BadCase{"signal=33", "invalid signal"}, BadCase{"signal=QUIT", "invalid signal"},
        BadCase{"signal=CONT", "invalid signal"}, BadCase{"signal=TSTP", "invalid signal"},
        BadCase{"signal=SYS", "invalid signal"}, BadCase{"signal=TRAP", "invalid signal"},
        BadCase{"signal=RTMIN+64", "invalid signal"},
        BadCase{"folded_root=label:", "invalid folded_root"},
        BadCase{"folded_root=label:a b", "invalid folded_root"},
        BadCase{"folded_root=process", "invalid folded_root"},
        BadCase{"timeline=sometimes", "invalid timeline"},
        BadCase{"output_mode=0755", "invalid output_mode='0755'"},
        BadCase{"output_mode=0700", "invalid output_mode"},
        BadCase{"output_mode=4600", "invalid output_mode"},
        BadCase{"output_mode=0400", "invalid output_mode"},
        BadCase{"output_mode=0200", "invalid output_mode"},
        BadCase{"output_mode=01600", "invalid output_mode"},
        BadCase{"output_mode=0o600", "invalid output_mode"},
        BadCase{"output_mode=00600", "invalid output_mode"},
        BadCase{"output_mode=", "invalid output_mode"},
        BadCase{"output_mode=rw", "invalid output_mode"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::to_string(info.index); });

// The list of known keys comes from the parser's table of keys; its order is part of the
// message users and scripts see, so it is pinned here.
TEST(ConfigTest, UnknownKeyListsEveryKeyInTheDocumentedOrder) {
  Config c;
  Status s = ParseConfig("bogus=1", &c);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(),
            "unknown configuration key 'bogus' (known keys: output, events, frequency, "
            "wall_frequency, engine, unwind, stack_bytes, dwarf_backend, signal, dither, "
            "timer_jitter, quiet, follow_fork, lazy, symbol_cache, exit_timeout, max_depth, "
            "max_memory, max_copy_memory, alloc_rate, alloc_seed, alloc_live_max, leak_limit, "
            "lock_rate, max_threads, path_map, window, keep, http, "
            "http_token, http_hosts, push_url, app_name, labels, tenant, output_mode, "
            "timeline, folded_root)");
}

// Every range the README's table shows is the one the parser checks (the table is made from
// the parser's rows; inprof_readme_config_keys compares it with README.md).
TEST(ConfigTest, KeyTableShowsTheCheckedRanges) {
  const std::string table = ConfigKeysMarkdown();
  EXPECT_NE(table.find("| `INPROF_FREQUENCY` | 99 | samples per CPU-second per thread "
                       "(1\u2013100000)."),
            std::string::npos);
  EXPECT_NE(table.find("stack copied per sample for `dwarf`/`auto` (1K\u20131M)."),
            std::string::npos);
  EXPECT_NE(table.find("| `INPROF_MAX_MEMORY` | 64M | bytes (at least 64K) for"),
            std::string::npos);
  Config c;
  EXPECT_TRUE(ParseConfig("frequency=100000,stack_bytes=1M,max_memory=64K", &c).ok());
  EXPECT_FALSE(ParseConfig("frequency=100001", &c).ok());
  EXPECT_FALSE(ParseConfig("stack_bytes=1025K", &c).ok());
  EXPECT_FALSE(ParseConfig("max_memory=65535", &c).ok());
}

TEST(ConfigTest, TimelineAndFoldedRoot) {
  Config c;
  EXPECT_TRUE(c.timeline);
  EXPECT_EQ(c.folded_root, "");
  ASSERT_TRUE(ParseConfig("timeline=0,folded_root=label:endpoint", &c).ok());
  EXPECT_FALSE(c.timeline);
  EXPECT_EQ(c.folded_root, "label:endpoint");
  ASSERT_TRUE(ParseConfig("folded_root=thread", &c).ok());
  EXPECT_EQ(c.folded_root, "thread");
}

TEST(ConfigTest, OutputModeIsOctalWithinOwnerReadWriteAndNoMore) {
  Config c;
  EXPECT_EQ(c.output_mode, 0600u);
  ASSERT_TRUE(ParseConfig("output_mode=0640", &c).ok());
  EXPECT_EQ(c.output_mode, 0640u);
  ASSERT_TRUE(ParseConfig("output_mode=644", &c).ok());
  EXPECT_EQ(c.output_mode, 0644u);
  ASSERT_TRUE(ParseConfig("output_mode=0666", &c).ok());
  EXPECT_EQ(c.output_mode, 0666u);
  ASSERT_TRUE(ParseConfig("output_mode=600", &c).ok());
  EXPECT_EQ(c.output_mode, 0600u);
}

// What gets into a message is what the user typed, made safe to print: one line, no escape
// sequences, and not a megabyte of it.
TEST(ConfigTest, MessagesAreOneLineWithControlCharactersEscaped) {
  Config c;
  for (const char* text :
       {"bogus\x1b[31m=1", "frequency=9\n9", "output=/tmp/x\r.txt", "max_depth=\x07", "\x1b[2J",
        "=\n", "http=a\nb", "push_url=http://a\nb", "app_name=a\x1b", "labels=a\n=b"}) {
    const Status s = ParseConfig(text, &c);
    ASSERT_FALSE(s.ok()) << text;
    for (char ch : s.message()) {
      EXPECT_FALSE(static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
          << "control character " << static_cast<int>(ch) << " in: " << s.message();
    }
  }
  const Status s = ParseConfig("frequency=" + std::string(100000, '9'), &c);
  ASSERT_FALSE(s.ok());
  EXPECT_LT(s.message().size(), 400u) << s.message();
  EXPECT_NE(s.message().find("invalid frequency"), std::string::npos);
  EXPECT_NE(s.message().find("(100000 bytes)"), std::string::npos);
}

// The C API passes C strings; other callers (the Lua bridge, a fuzzer) pass any bytes: a NUL
// must not end a value early and let the rest through.
TEST(ConfigTest, AnEmbeddedNulIsNotTheEndOfAValue) {
  Config c;
  using namespace std::string_view_literals;
  EXPECT_FALSE(ParseConfig("frequency=99\0junk"sv, &c).ok());
  EXPECT_FALSE(ParseConfig("exit_timeout=1\0"sv, &c).ok());
  EXPECT_FALSE(ParseConfig("output=/tmp/a.folded\0.svg"sv, &c).ok());
  EXPECT_FALSE(ParseConfig("max_depth=1\0"sv, &c).ok());
  EXPECT_EQ(c.frequency, 99);
}

TEST(ConfigTest, ListsAndPathsAreBounded) {
  Config c;
  std::string outputs = "output=";
  for (int i = 0; i < 65; ++i) outputs += "/tmp/o" + std::to_string(i) + ".folded,";
  Status s = ParseConfig(outputs, &c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("more than 64 outputs"), std::string::npos) << s.message();
  outputs.resize(outputs.size() - std::string("/tmp/o64.folded,").size());
  EXPECT_TRUE(ParseConfig(outputs, &c).ok());
  EXPECT_EQ(c.outputs.size(), 64u);

  s = ParseConfig("output=/tmp/" + std::string(kMaxConfigPath, 'a') + ".folded", &c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("at most 4095 bytes"), std::string::npos) << s.message();

  std::string map = "path_map=";
  for (int i = 0; i < 65; ++i) map += "/b" + std::to_string(i) + "=/s:";
  s = ParseConfig(map, &c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("invalid path_map"), std::string::npos);

  std::string hosts = "http_hosts=";
  for (int i = 0; i < 65; ++i) hosts += "h" + std::to_string(i) + ",";
  s = ParseConfig(hosts, &c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("at most 64 host names"), std::string::npos) << s.message();

  Config e;
  EXPECT_FALSE(ParseConfig("http_hosts=" + std::string(254, 'a'), &e).ok());
  EXPECT_FALSE(ParseConfig("http_token=" + std::string(4097, 'a'), &e).ok());
  EXPECT_FALSE(ParseConfig("tenant=" + std::string(257, 'a'), &e).ok());
  EXPECT_TRUE(ParseConfig("tenant=" + std::string(256, 'a'), &e).ok());
}

// A path with a comma is one output when the comma is escaped; backslashes and bytes by \xHH.
TEST(ConfigTest, OutputPathsTakeEscapedCommasBackslashesAndBytes) {
  Config c;  // the directories need not exist: check_outputs off
  ASSERT_TRUE(
      ParseConfig(R"(output=/tmp/a\,b c/x.folded,/tmp/d\\e/p.log,frequency=250)", &c, false).ok());
  ASSERT_EQ(c.outputs.size(), 2u);
  EXPECT_EQ(c.outputs[0], "/tmp/a,b c/x.folded");
  EXPECT_EQ(c.outputs[1], "/tmp/d\\e/p.log");
  EXPECT_EQ(c.frequency, 250);
  // An escaped comma is no item separator either: "=" after it does not start a key.
  ASSERT_TRUE(ParseConfig(R"(output=/tmp/k\,v=w/x.folded)", &c, false).ok());
  ASSERT_EQ(c.outputs.size(), 1u);
  EXPECT_EQ(c.outputs[0], "/tmp/k,v=w/x.folded");
  // A newline only as \x0a: a raw one is still refused.
  ASSERT_TRUE(ParseConfig(R"(output=/tmp/n\x0aL/x.folded)", &c, false).ok());
  EXPECT_EQ(c.outputs.at(0), "/tmp/n\nL/x.folded");
  EXPECT_FALSE(ParseConfig("output=/tmp/n\nL/x.folded", &c, false).ok());
  EXPECT_FALSE(ParseConfig(R"(output=/tmp/z\x00/x.folded)", &c, false).ok());
  // Any other backslash is itself, as before escapes existed.
  ASSERT_TRUE(ParseConfig(R"(output=/tmp/q\w\x4/x.folded)", &c, false).ok());
  EXPECT_EQ(c.outputs.at(0), R"(/tmp/q\w\x4/x.folded)");

  // What the writer of a list escapes, the reader gives back.
  for (const std::string path : {"/tmp/a,b c\nd/profile.inprofraw", "/tmp/\\,\\\\x41/o.folded",
                                 " /leading space/x.folded", "/tmp/\x1b[31m/x.svg"}) {
    const std::string item = EscapeOutputListItem(path);
    EXPECT_FALSE(HasControlForTest(item)) << item;
    std::vector<std::string> outputs;
    ASSERT_TRUE(ParseOutputs(item + ",/tmp/second.folded", &outputs, false).ok()) << item;
    ASSERT_EQ(outputs.size(), 2u) << item;
    EXPECT_EQ(outputs[0], path);
  }
}

// A user who sets INPROF_OUTPUT by hand: a preloaded program writes to a path with a comma,
// a space and a newline in it, next to a plain output of the same list.
TEST(ConfigTest, PreloadedProgramWritesToAnEscapedPath) {
  const std::string dir = test::MakeTempDir();
  const std::string odd = dir + "/a,b c\nd.folded";
  const test::ProcessResult r =
      test::RunProcess({INPROF_WORKLOAD, "shares", "0.4"},
                       {{"LD_PRELOAD", test::PreloadValue()},
                        {"INPROF_OUTPUT", dir + R"(/a\,b c\x0ad.folded,)" + dir + "/plain.folded"},
                        {"INPROF_FREQUENCY", "499"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("invalid output"), std::string::npos) << r.err;
  ASSERT_TRUE(test::FileExists(odd)) << r.err;
  EXPECT_TRUE(test::FileExists(dir + "/plain.folded")) << r.err;
  EXPECT_FALSE(test::FileExists(dir + "/a")) << "the comma split the path";
  EXPECT_EQ(test::ReadFile(odd), test::ReadFile(dir + "/plain.folded"));
  EXPECT_FALSE(test::ReadFolded(odd).empty());
  // The summary names it the way INPROF_OUTPUT does: one item, one line.
  EXPECT_NE(r.err.find(R"(outputs=)" + dir + R"(/a\,b c\x0ad.folded,)"), std::string::npos)
      << r.err;
}

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

TEST_F(ConfigEnvTest, OutputModeFromTheEnvironment) {
  setenv("INPROF_OUTPUT_MODE", "0640", 1);
  Config c;
  Status s = ConfigFromEnvironment(&c, /*secure=*/false);
  setenv("INPROF_OUTPUT_MODE", "0741", 1);
  Config bad;
  Status refused = ConfigFromEnvironment(&bad, /*secure=*/false);
  unsetenv("INPROF_OUTPUT_MODE");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(c.output_mode, 0640u);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("INPROF_OUTPUT_MODE: invalid output_mode='0741'"),
            std::string::npos)
      << refused.message();
}

// A privileged program (AT_SECURE) takes nothing from its environment, not even an error
// from it, and says so once for the process.
TEST_F(ConfigEnvTest, PrivilegedProcessIgnoresTheEnvironmentAndSaysSoOnce) {
  setenv("INPROF_OUTPUT", "/tmp/e.folded", 1);
  setenv("INPROF_FREQUENCY", "123", 1);
  setenv("INPROF_BOGUS", "1", 1);
  Config c;
  ::testing::internal::CaptureStderr();
  Status first = ConfigFromEnvironment(&c, /*secure=*/true);
  Status second = ConfigFromEnvironment(&c, /*secure=*/true);
  const bool ignored = EnvironmentIgnored(true);
  const std::string err = ::testing::internal::GetCapturedStderr();
  Config unprivileged;
  Status refused = ConfigFromEnvironment(&unprivileged, /*secure=*/false);
  unsetenv("INPROF_OUTPUT");
  unsetenv("INPROF_FREQUENCY");
  unsetenv("INPROF_BOGUS");
  EXPECT_TRUE(first.ok()) << first.message();
  EXPECT_TRUE(second.ok()) << second.message();
  EXPECT_TRUE(ignored);
  EXPECT_TRUE(c.outputs.empty());
  EXPECT_EQ(c.frequency, 99);
  EXPECT_EQ(err,
            "inprof: ignoring the INPROF_* environment variables: this program runs with "
            "elevated privileges (setuid, setgid or file capabilities: AT_SECURE); only its "
            "own inprof_start(config) call profiles it\n");
  EXPECT_FALSE(refused.ok()) << "the same environment, unprivileged, is read (and refused)";
}

TEST_F(ConfigEnvTest, NothingToSayWithoutInprofVariables) {
  EXPECT_FALSE(EnvironmentIgnored(true));
  setenv("INPROF_OUTPUT", "/tmp/e.folded", 1);
  const bool unprivileged = EnvironmentIgnored(false);
  unsetenv("INPROF_OUTPUT");
  EXPECT_FALSE(unprivileged);
}

// Inputs the fuzz target found or was seeded with, and this file's own cases, through the
// fuzz target's checks (refusals name a key, accepted values are in range and stable).
TEST(ConfigTest, FuzzCorpusPassesTheFuzzerChecks) {
  const std::string dir = INPROF_CONFIG_CORPUS;
  size_t files = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream in(dir + "/" + e->d_name, std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      EXPECT_EQ(fuzz::CheckConfig(text.str()), "") << e->d_name;
      ++files;
    }
    closedir(d);
  }
  EXPECT_GT(files, 0u) << "no seeds in " << dir;
  EXPECT_EQ(fuzz::CheckConfig("frequency=250,output=/tmp/a.folded,b.svg,output_mode=0640"), "");
}

// The privileged-program check itself: this test binary runs without elevated privileges.
TEST(ConfigTest, AnOrdinaryProcessIsNotSecure) { EXPECT_FALSE(ProcessIsSecure()); }

}  // namespace
}  // namespace inprof::internal
