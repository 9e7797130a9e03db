// The first hour of a new user, command by command as typed: wrong usage is refused before
// anything runs (exit 2, the option's own name), every hint the recorder prints names a file
// that exists and runs when pasted, every number says its unit, and every file inprof writes
// (pprof included, and pprof from Go) inprof reads, while files it does not read are named
// for what they are.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "pprof_reader.h"
#include "test_util.h"

namespace inprof::test {
namespace {

const std::string kGoProfile =
    std::string(INPROF_TEST_SOURCE_DIR) + "/tests/data/pprof/go_cpu.pb.gz";

std::map<std::string, std::string> RecordEnv() {
  std::map<std::string, std::string> env = {{"INPROF_LIBRARY", INPROF_LIB}};
  const std::string prefix = INPROF_PRELOAD_PREFIX_VALUE;
  if (!prefix.empty()) {
    env["LD_PRELOAD"] = prefix;
    env["ASAN_OPTIONS"] = "detect_leaks=0";
  }
  return env;
}

ProcessResult Inprof(std::vector<std::string> args,
                     std::map<std::string, std::string> env = RecordEnv()) {
  args.insert(args.begin(), INPROF_VIEWER);
  return RunProcess(args, env);
}

// `command` run by sh in `dir`, with `inprof` on PATH as this build's viewer.
ProcessResult Shell(const std::string& dir, const std::string& command) {
  const std::string viewer = INPROF_VIEWER;
  const std::string bin = viewer.substr(0, viewer.rfind('/'));
  auto env = RecordEnv();
  env["PATH"] = bin + ":" + std::string(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
  return RunProcess({"/bin/sh", "-c", "cd \"$0\" && " + command, dir}, env);
}

bool HaveGo() { return system("command -v go >/dev/null 2>&1") == 0; }

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string Gunzipped(const std::string& path) {
  std::string error, out;
  EXPECT_TRUE(Gunzip(ReadFile(path), &out, &error)) << error;
  return out;
}

// A shell loop busy for a few tenths of a second: long enough to be sampled.
constexpr const char* kBusy = "i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done";

TEST(FirstHour, RecordRefusesBadValuesBeforeRunningAnything) {
  const std::string dir = MakeTempDir();
  const std::string mark = dir + "/ran";
  struct Case {
    std::vector<std::string> option;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"-F", "abc"}, "-F abc: expected a sampling rate in Hz between 1 and 100000"},
      {{"-F", "0"}, "-F 0: expected a sampling rate"},
      {{"-F", "200000"}, "-F 200000: expected a sampling rate"},
      {{"--frequency=abc"}, "-F abc: expected"},
      {{"--events", "cpu,bogus"}, "--events cpu,bogus: expected a list of events from: cpu, wall"},
      {{"--events", "cpu,frequency=9"}, "--events cpu,frequency=9: expected a list of events"},
      {{"--engine", "fast"}, "--engine fast: expected auto"},
      {{"--unwind", "magic"}, "--unwind magic: expected fp"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"record", "-o", dir + "/out"};
    args.insert(args.end(), c.option.begin(), c.option.end());
    args.insert(args.end(), {"--", "sh", "-c", "touch " + mark});
    const ProcessResult r = Inprof(args);
    EXPECT_EQ(r.exit_code, 2) << c.option[0] << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("INPROF_"), std::string::npos)
        << "names a variable the user never set: " << r.err;
    EXPECT_NE(r.err.find("inprof record --help"), std::string::npos) << r.err;
    EXPECT_FALSE(FileExists(mark)) << c.option[0] << ": the command ran";
    EXPECT_FALSE(FileExists(dir + "/out")) << c.option[0] << ": the output directory was made";
  }
}

// Every "more:" line of a summary: a command that runs from where record ran, or a file that
// exists. `go tool pprof -http=:` serves until stopped: its file is checked with -top instead.
void ExpectHintsWork(const std::string& cwd, const std::string& err) {
  const size_t more = err.rfind("\nmore:\n");
  ASSERT_NE(more, std::string::npos) << err;
  std::istringstream lines(err.substr(more + 7));
  size_t commands = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("  ")) break;
    line = line.substr(2);
    std::smatch m;
    if (std::regex_match(line, m, std::regex(R"(open (\S+) in a browser.*)"))) {
      EXPECT_TRUE(FileExists(cwd + "/" + m[1].str())) << line;
      continue;
    }
    if (line.starts_with("go tool pprof -http=: ")) {
      const std::string file = line.substr(22);
      EXPECT_TRUE(FileExists(cwd + "/" + file)) << line;
      if (HaveGo()) {
        const ProcessResult r = Shell(cwd, "go tool pprof -top " + file);
        EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.err;
      }
      // The same file through the viewer, which reads pprof.
      const ProcessResult r = Shell(cwd, "inprof top " + file);
      EXPECT_EQ(r.exit_code, 0) << r.err;
      ++commands;
      continue;
    }
    ASSERT_TRUE(line.starts_with("inprof ")) << line;
    const ProcessResult r = Shell(cwd, line + " > /dev/null");
    EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.err;
    ++commands;
  }
  EXPECT_GE(commands, 3u) << err;
}

TEST(FirstHour, TwoEventsCountEachProcessOnceAndHintsNameTheFilesWritten) {
  const std::string dir = MakeTempDir();
  const ProcessResult r =
      Shell(dir, std::string("inprof record -o out --keep-raw --events cpu,wall -- sh -c '") +
                     kBusy + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // One process, one raw file (it holds both events), one process in the summary.
  std::vector<std::string> raw;
  if (DIR* d = opendir((dir + "/out/raw").c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') raw.emplace_back(e->d_name);
    }
    closedir(d);
  }
  EXPECT_EQ(raw, std::vector<std::string>{"profile.inprofraw"});
  EXPECT_NE(r.err.find("(1 process in the profile)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("profile.folded"), std::string::npos) << "no such file with two events";
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(symbolized \d+ binar(y|ies),)"))) << r.err;
  EXPECT_EQ(r.err.find("symbolized 1 binaries"), std::string::npos) << r.err;
  // Samples, not nanoseconds: the CPU event is sampled, each sample a period of CPU time.
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex(R"(event cpu \(samples of 10\.1 ms\), total \d+ \([0-9.]+ m?s\))")))
      << r.err;
  ExpectHintsWork(dir, r.err);

  // The raw profile symbolized again, with the format symbolize-profile writes by default.
  const ProcessResult s = Shell(dir,
                                "inprof symbolize-profile --formats speedscope,pprof "
                                "out/raw/profile.inprofraw -o again");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_TRUE(FileExists(dir + "/again/profile.speedscope.json") ||
              FileExists(dir + "/again/profile.cpu.speedscope.json"))
      << s.err;

  // The recorded pprof: every event is a sample type; --event picks one; no false warning.
  PprofProfile p;
  std::string error;
  ASSERT_TRUE(DecodePprof(Gunzipped(dir + "/out/profile.pb.gz"), &p, &error)) << error;
  for (int64_t c : p.comments) {
    EXPECT_FALSE(p.S(c).starts_with("inprof: warning: symbolized")) << p.S(c);
  }
  const ProcessResult wall = Shell(dir, "inprof top -e wall out/profile.pb.gz");
  EXPECT_EQ(wall.exit_code, 0) << wall.err;
  EXPECT_NE(wall.out.find("event wall (nanoseconds)"), std::string::npos) << wall.out;
}

TEST(FirstHour, PerProcessHintsNameTheProcessFiles) {
  const std::string dir = MakeTempDir();
  // The shell only waits: its busy child alone took samples and wrote profile.<pid>.*.
  const ProcessResult r = Shell(
      dir, std::string("inprof record -o out --per-process -- sh -c '(") + kBusy + ") & wait'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (!FileExists(dir + "/out/profile.pb.gz")) {
    EXPECT_EQ(r.err.find("out/profile.pb.gz"), std::string::npos) << r.err;
    EXPECT_TRUE(
        std::regex_search(r.err, std::regex(R"(go tool pprof -http=: out/profile\.\d+\.pb\.gz)")))
        << r.err;
  }
  ExpectHintsWork(dir, r.err);
}

TEST(FirstHour, ReadsGoCpuProfiles) {
  // tests/data/pprof/go_cpu.go's profile (README there): 83 samples of 10 ms; main.hot holds
  // 500 ms itself (go tool pprof -top says so) and is under every sample.
  ProcessResult r = Inprof({"top", "--no-progress", kGoProfile});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("event cpu (nanoseconds), total 830000000 (830 ms)"), std::string::npos)
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(60\.24%\s+100\.00%\s+main\.hot)"))) << r.out;
  r = Inprof({"top", "-e", "samples", "--absolute", kGoProfile});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("event samples (count), total 83"), std::string::npos) << r.out;
  r = Inprof({"top", "-e", "bogus", kGoProfile});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("it has: cpu, samples"), std::string::npos) << r.err;

  const std::string dir = MakeTempDir();
  r = Inprof({"convert", kGoProfile, "-o", dir + "/go.folded"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFile(dir + "/go.folded"),
            "runtime.main;main.main;main.cold;main.hot 120000000\n"
            "runtime.main;main.main;main.cold;main.hot;runtime.asyncPreempt 80000000\n"
            "runtime.main;main.main;main.hot 380000000\n"
            "runtime.main;main.main;main.hot;runtime.asyncPreempt 250000000\n");
  r = Inprof({"callers", "main.hot", kGoProfile});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("main.cold"), std::string::npos) << r.out;
  r = Inprof({"flame", "-o", dir + "/go.svg", kGoProfile});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(ReadFile(dir + "/go.svg").find("main.cold"), std::string::npos);
  r = Inprof({"annotate", kGoProfile});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = Inprof({"diff", kGoProfile, kGoProfile});
  EXPECT_EQ(r.exit_code, 0) << r.err;

  // Not gzipped: the same profile.
  WriteText(dir + "/plain.pb", Gunzipped(kGoProfile));
  const ProcessResult plain = Inprof({"top", "--no-progress", dir + "/plain.pb"});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out, Inprof({"top", "--no-progress", kGoProfile}).out);

  // What `go tool pprof -proto` writes (its own encoder, not the runtime's).
  if (HaveGo()) {
    const ProcessResult go = Shell(dir, "go tool pprof -proto " + kGoProfile + " > fromgo.pb.gz");
    ASSERT_EQ(go.exit_code, 0) << go.err;
    r = Inprof({"top", dir + "/fromgo.pb.gz"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("total 830000000"), std::string::npos) << r.out;
  }
}

TEST(FirstHour, FilesTheViewerDoesNotReadAreNamedForWhatTheyAre) {
  const std::string dir = MakeTempDir();
  WriteText(dir + "/p.inprofraw", "inprof-raw 2\nmeta pid 1\n");
  ProcessResult r = Inprof({"top", dir + "/p.inprofraw"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("a raw profile"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("inprof symbolize-profile " + dir + "/p.inprofraw -o DIR"),
            std::string::npos)
      << r.err;

  r = Inprof({"top", INPROF_VIEWER});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("an ELF file (a program or library), not a profile"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("inprof record --"), std::string::npos) << r.err;

  WriteText(dir + "/data.bin", std::string("\x01\x02\0\0garbage", 11));
  r = Inprof({"flame", "-o", dir + "/x.svg", dir + "/data.bin"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("binary data, not a profile the viewer reads"), std::string::npos) << r.err;

  // Text that is nothing else is read as folded stacks, and the error says so.
  WriteText(dir + "/notes.txt", "hello world\n");
  r = Inprof({"top", dir + "/notes.txt"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("(read as folded stacks"), std::string::npos) << r.err;

  // A cut pprof, and a bomb bounded by the profile cap.
  const std::string go = ReadFile(kGoProfile);
  WriteText(dir + "/cut.pb.gz", go.substr(0, go.size() / 2));
  r = Inprof({"top", dir + "/cut.pb.gz"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("gzip: the compressed data ends early"), std::string::npos) << r.err;
  {
    gzFile out = gzopen((dir + "/bomb.pb.gz").c_str(), "wb9");
    const std::string zeros(1 << 20, '\0');
    gzwrite(out, zeros.data(), static_cast<unsigned>(zeros.size()));
    gzclose(out);
  }
  auto env = RecordEnv();
  env["INPROF_MAX_PROFILE_BYTES"] = "100000";
  r = Inprof({"top", dir + "/bomb.pb.gz"}, env);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("decompresses to more than 100000 bytes"), std::string::npos) << r.err;

  // A gzipped folded file is read as folded stacks.
  {
    gzFile out = gzopen((dir + "/stacks.folded.gz").c_str(), "wb");
    const std::string text = "main;work 7\nmain 3\n";
    gzwrite(out, text.data(), static_cast<unsigned>(text.size()));
    gzclose(out);
  }
  r = Inprof({"top", "--absolute", dir + "/stacks.folded.gz"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("total 10"), std::string::npos) << r.out;
}

TEST(FirstHour, ConvertWritesAndNamesEveryFormat) {
  const ProcessResult help = Inprof({"convert", "--help"});
  for (const char* ext : {".folded", ".log", ".json", ".speedscope.json", ".svg", ".pb.gz"}) {
    EXPECT_NE(help.out.find(ext), std::string::npos) << ext;
  }
  const std::string dir = MakeTempDir();
  for (const char* name : {"o.speedscope.json", "o.svg", "o.pb.gz", "o.json"}) {
    const ProcessResult r = Inprof({"convert", kGoProfile, "-o", dir + "/" + name});
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_TRUE(FileExists(dir + "/" + name)) << name;
  }
  // Written by inprof, read by inprof.
  const ProcessResult back = Inprof({"top", dir + "/o.pb.gz"});
  EXPECT_EQ(back.exit_code, 0) << back.err;
  EXPECT_NE(back.out.find("main.hot"), std::string::npos) << back.out;
  const ProcessResult bad = Inprof({"convert", kGoProfile, "-o", dir + "/o.txt"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find(".speedscope.json, .svg or .pb.gz"), std::string::npos) << bad.err;

  // The runtime's own refusal of an output name lists speedscope too.
  const ProcessResult runtime = RunProcess({"/bin/true"}, {{"LD_PRELOAD", PreloadValue()},
                                                           {"INPROF_OUTPUT", dir + "/out.bogus"},
                                                           {"ASAN_OPTIONS", "detect_leaks=0"}});
  EXPECT_NE(runtime.err.find(".speedscope.json (speedscope"), std::string::npos) << runtime.err;
}

TEST(FirstHour, SingleFileGrepIsToldToAddH) {
  const std::string dir = MakeTempDir();
  WriteText(dir + "/hot.c", "int main() {\n  for (;;) x += 1;\n}\n");
  WriteText(dir + "/p.folded", "main (" + dir + "/hot.c:2) 10\n");
  ProcessResult r = Shell(dir, "grep -n 'x +=' hot.c | inprof hot p.folded");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("add -H, as in grep -Hn PATTERN FILE | inprof hot p.folded"),
            std::string::npos)
      << r.err;
  r = Shell(dir, "grep -Hn 'x +=' hot.c | inprof hot p.folded");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("hot.c:2:[G5"), std::string::npos) << r.out;
}

TEST(FirstHour, Addr2lineErrorsAreBinutilsWords) {
  if (system("command -v addr2line >/dev/null 2>&1") != 0) GTEST_SKIP() << "no binutils";
  const std::string dir = MakeTempDir();
  WriteText(dir + "/hot.c", "int main() { return 0; }\n");
  const std::string viewer = INPROF_VIEWER;
  ASSERT_EQ(mkdir((dir + "/bin").c_str(), 0755), 0);
  ASSERT_EQ(symlink(viewer.c_str(), (dir + "/bin/addr2line").c_str()), 0);
  // Both run as "addr2line" (perf runs it by that name), which both name in their messages.
  for (const std::string& file : {std::string("hot.c"), std::string("missing.c")}) {
    const ProcessResult ours = Shell(dir, "PATH=\"$PWD/bin:$PATH\" addr2line -e " + file + " 0x10");
    const ProcessResult theirs = Shell(dir, "addr2line -e " + file + " 0x10");
    EXPECT_EQ(ours.err, theirs.err);
    EXPECT_EQ(ours.exit_code, theirs.exit_code);
    const ProcessResult sub = Shell(dir, "inprof addr2line -e " + file + " 0x10");
    EXPECT_EQ(sub.err, theirs.err);
  }
}

// perf script output without +srcline, over less than a second.
constexpr const char* kShortScript =
    "w 1  1.100000:    1 cpu-clock: \n\t    117c leaf+0x1c (/w)\n\n"
    "w 1  1.200000:    1 cpu-clock: \n\t    117c leaf+0x1c (/w)\n\n";

TEST(FirstHour, HintsFitTheInput) {
  const std::string dir = MakeTempDir();
  WriteText(dir + "/p.script", kShortScript);
  ProcessResult r = Inprof({"top", dir + "/p.script"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("perf script -F +srcline --full-source-path"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("folded stacks need"), std::string::npos) << r.out;
  r = Inprof({"annotate", kGoProfile + "x"});  // no such file: an error, not a hint
  EXPECT_EQ(r.exit_code, 1);

  // A profile of one second: its map is one column, and the axis label under it still fits.
  r = Inprof({"timeline", dir + "/p.script", "-o", dir + "/t.html"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  const std::string html = ReadFile(dir + "/t.html");
  ASSERT_TRUE(std::regex_search(
      html, m, std::regex(R"re(<svg class="map"[^>]* data-x0="(\d+)"[^>]* width="(\d+)")re")))
      << html.substr(0, 2000);
  // "seconds since the start": 23 characters of at least 6 px each after the grid's corner.
  EXPECT_GE(std::stoi(m[2]), std::stoi(m[1]) + 23 * 6);
}

// The options of a help text: every -x and --xx on its option lines (those that start with a
// dash after a few spaces), by line, so "-e, --event NAME" is one option in two spellings.
std::vector<std::vector<std::string>> HelpOptions(const std::string& help) {
  std::vector<std::vector<std::string>> options;
  std::istringstream lines(help);
  const std::regex option_line(R"(^ {1,8}-)");
  const std::regex spelling(R"((^|[ ,\[])(--?[a-zA-Z][a-zA-Z-]*))");
  for (std::string line; std::getline(lines, line);) {
    if (!std::regex_search(line, option_line)) continue;
    // The spellings, before the description (two spaces after them).
    std::string spec = line.substr(line.find('-'));
    if (const size_t gap = spec.find("  "); gap != std::string::npos) spec.resize(gap);
    std::vector<std::string> names;
    for (std::sregex_iterator it(spec.begin(), spec.end(), spelling), end; it != end; ++it) {
      const std::string name = (*it)[2];
      if (name != "-h" && name != "--help") names.push_back(name);
    }
    // "--from T, --to T, --thread NAME": several options on one line, each its own.
    if (names.size() > 2 || (names.size() == 2 && names[0].starts_with("--"))) {
      for (const std::string& name : names) options.push_back({name});
    } else if (!names.empty()) {
      options.push_back(names);
    }
  }
  return options;
}

bool Mentions(const std::string& text, const std::string& option) {
  return std::regex_search(text, std::regex("(^|[^a-zA-Z0-9-])" + option + "([^a-zA-Z0-9-]|$)"));
}

// Every option a command's --help lists is in the docs, in one of its spellings; every option
// the docs' synopsis of a command (`inprof COMMAND [-o DIR] ...` in a code block) shows is one
// its --help lists.
TEST(FirstHour, EveryOptionInHelpIsDocumentedAndTheOtherWayRound) {
  const std::string docs = std::string(INPROF_TEST_SOURCE_DIR) + "/docs/";
  const std::map<std::string, std::vector<std::string>> pages = {
      {"top", {"viewer.md"}},
      {"annotate", {"viewer.md"}},
      {"heat", {"viewer.md", "heat.md"}},
      {"callers", {"viewer.md"}},
      {"callees", {"viewer.md"}},
      {"diff", {"viewer.md"}},
      {"convert", {"viewer.md"}},
      {"flame", {"flame-graphs.md", "viewer.md"}},
      {"timeline", {"timeline.md", "viewer.md"}},
      {"record", {"record.md"}},
      {"symbolize-profile", {"record.md", "raw-profile.md"}},
      {"hot", {"code-search.md", "viewer.md"}},
      {"grep", {"code-search.md", "viewer.md"}},
      {"query", {"code-search.md", "viewer.md"}},
      {"symbolize", {"symbolizer.md"}},
      {"addr2line", {"symbolizer.md"}},
  };
  for (const auto& [command, files] : pages) {
    std::string text;
    for (const std::string& file : files) text += ReadFile(docs + file) + "\n";
    const ProcessResult help = Inprof({command, "--help"});
    ASSERT_EQ(help.exit_code, 0) << command;
    const auto options = HelpOptions(help.out);
    EXPECT_GT(options.size(), 1u) << command << ": no options found in\n" << help.out;
    std::vector<std::string> listed;
    for (const auto& spellings : options) {
      listed.insert(listed.end(), spellings.begin(), spellings.end());
      const bool documented = std::any_of(spellings.begin(), spellings.end(),
                                          [&](const std::string& s) { return Mentions(text, s); });
      EXPECT_TRUE(documented) << command << " " << spellings[0] << " is in --help, not in docs/"
                              << files[0];
    }
    // The synopsis lines of this command in its pages.
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      const std::string start = "inprof " + command + " ";
      const size_t at = line.find(start);
      if (at == std::string::npos ||
          line.substr(0, at).find_first_not_of(' ') != std::string::npos ||
          line.find('[') == std::string::npos) {
        continue;
      }
      const std::string rest = line.substr(at + start.size());
      const std::regex spelling(R"((^|[ \[|])(--?[a-zA-Z][a-zA-Z-]*))");
      for (std::sregex_iterator it(rest.begin(), rest.end(), spelling), end; it != end; ++it) {
        const std::string name = (*it)[2];
        if (name == "-h" || name == "--help" || name == "--") continue;
        EXPECT_NE(std::find(listed.begin(), listed.end(), name), listed.end())
            << "docs show `" << line << "` but " << command << " --help has no " << name;
      }
    }
  }
}

TEST(FirstHour, VersionHelpAndSwappedArguments) {
  ProcessResult r = Inprof({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(std::regex_match(r.out, std::regex(R"(inprof \d+\.\d+\.\d+\n)"))) << r.out;
  for (const char* command : {"top", "record", "hot", "symbolize-profile", "timeline"}) {
    const ProcessResult help = Inprof({"help", command});
    EXPECT_EQ(help.exit_code, 0) << command;
    EXPECT_EQ(help.out, Inprof({command, "--help"}).out) << command;
  }
  r = Inprof({"help", "nosuch"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'nosuch'"), std::string::npos) << r.err;

  r = Inprof({"callers", kGoProfile, "main.hot"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("the target comes first: inprof callers main.hot " + kGoProfile),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace inprof::test
