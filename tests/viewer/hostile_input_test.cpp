// The viewer on profiles from elsewhere, as a CI job that annotates a submitted profile runs
// it: source files outside --root are not shown (symlinks and ".." resolved), FIFOs and
// devices named by a profile are refused at once, sizes are capped, and inputs built to be
// slow or deep (100k-deep JSON, thousands of events, very long lines) get a clear error or a
// bounded answer instead of a crash.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace inprof::test {
namespace {

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// The viewer as a shell command: under the cross lane's emulator too, which RunProcess adds
// only in front of the program it starts itself (here the shell).
std::string ViewerCommand() {
  std::string command;
  for (const std::string& word : EmulatorPrefix()) command += "'" + word + "' ";
  return command + "'" + INPROF_VIEWER + "'";
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A tree with a source inside the root, a secret outside it, and a symlink inside the root
// that points at the secret; the profile samples all three.
struct Tree {
  std::string dir, root, profile;
};

Tree MakeTree() {
  Tree t;
  t.dir = MakeTempDir();
  t.root = t.dir + "/root";
  mkdir(t.root.c_str(), 0700);
  mkdir((t.root + "/src").c_str(), 0700);
  Write(t.root + "/src/in.cpp", "int a;\nint inside_marker = 1;\nint b;\n");
  Write(t.dir + "/secret.cpp", "SECRET_TEXT\n");
  EXPECT_EQ(symlink((t.dir + "/secret.cpp").c_str(), (t.root + "/src/link.cpp").c_str()), 0);
  t.profile = t.dir + "/submitted.folded";
  Write(t.profile, "main (" + t.root + "/src/in.cpp:2);leak (" + t.dir + "/secret.cpp:1) 5\n" +
                       "main (" + t.root + "/src/in.cpp:2);peek (" + t.root +
                       "/src/link.cpp:1) 3\n");
  return t;
}

TEST(ViewerHostileInput, AnnotateRootShowsNothingFromOutsideIt) {
  const Tree t = MakeTree();
  const ProcessResult r =
      RunProcess({INPROF_VIEWER, "annotate", "--root", t.root, "-n", "5", t.profile}, {});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "inside_marker")) << r.out;
  EXPECT_FALSE(Contains(r.out, "SECRET_TEXT")) << r.out;
  EXPECT_FALSE(Contains(r.err, "SECRET_TEXT")) << r.err;
  // Each refused file is still listed with its profiled lines, and says why it has no text.
  EXPECT_TRUE(Contains(r.out, "(source not read: outside --root " + t.root + ")")) << r.out;
  EXPECT_TRUE(Contains(r.err, t.dir + "/secret.cpp: not read: outside --root " + t.root)) << r.err;
  EXPECT_TRUE(Contains(r.err, "inprof: 2 source files were not read: outside --root " + t.root))
      << r.err;

  const ProcessResult json =
      RunProcess({INPROF_VIEWER, "annotate", "--json", "--root", t.root, "-n", "5", t.profile}, {});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_FALSE(Contains(json.out, "SECRET_TEXT")) << json.out;
  EXPECT_TRUE(Contains(json.out, "\"unavailable\":\"outside --root " + t.root + "\"")) << json.out;

  // Without --root, as before: every regular file the profile names is read.
  const ProcessResult open = RunProcess({INPROF_VIEWER, "annotate", "-n", "5", t.profile}, {});
  EXPECT_EQ(open.exit_code, 0) << open.err;
  EXPECT_TRUE(Contains(open.out, "SECRET_TEXT")) << open.out;

  const ProcessResult missing =
      RunProcess({INPROF_VIEWER, "annotate", "--root", t.dir + "/nope", t.profile}, {});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(Contains(missing.err, "--root " + t.dir + "/nope: No such file or directory"))
      << missing.err;
}

TEST(ViewerHostileInput, GrepAndQueryRootReadNothingFromOutsideIt) {
  const Tree t = MakeTree();
  const ProcessResult secret =
      RunProcess({INPROF_VIEWER, "grep", "--root", t.root, "SECRET", t.profile}, {});
  EXPECT_EQ(secret.exit_code, 1) << secret.out << secret.err;
  EXPECT_EQ(secret.out, "");
  EXPECT_TRUE(Contains(secret.err, "2 source files were not read: outside --root " + t.root))
      << secret.err;
  const ProcessResult inside =
      RunProcess({INPROF_VIEWER, "grep", "--root", t.root, "inside_marker", t.profile}, {});
  EXPECT_EQ(inside.exit_code, 0) << inside.err;
  EXPECT_TRUE(Contains(inside.out, "src/in.cpp:2:")) << inside.out;
  // An explicit PATH outside the root is refused too, by name.
  const ProcessResult named = RunProcess(
      {INPROF_VIEWER, "grep", "--root", t.root, "SECRET", t.profile, t.dir + "/secret.cpp"}, {});
  EXPECT_EQ(named.out, "");
  EXPECT_TRUE(Contains(named.err, "secret.cpp: not read: outside --root " + t.root)) << named.err;
  // Without --root, grep reads what the profile names.
  const ProcessResult open = RunProcess({INPROF_VIEWER, "grep", "SECRET", t.profile}, {});
  EXPECT_EQ(open.exit_code, 0) << open.err;
  EXPECT_TRUE(Contains(open.out, "SECRET_TEXT")) << open.out;
}

// Without O_NONBLOCK the FIFO's open would wait for a writer forever (the test would time
// out); /dev/zero would be read until memory ran out.
TEST(ViewerHostileInput, FifosAndDevicesNamedByAProfileAreRefusedAtOnce) {
  const std::string dir = MakeTempDir();
  ASSERT_EQ(mkfifo((dir + "/pipe.cpp").c_str(), 0600), 0);
  const std::string profile = dir + "/p.folded";
  Write(profile, "main (" + dir + "/pipe.cpp:1) 5\nmain (/dev/zero:1);f (/dev/zero:2) 3\n");
  const ProcessResult r = RunProcess({INPROF_VIEWER, "annotate", "-n", "5", profile}, {});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.err, dir + "/pipe.cpp: not read: not a regular file (a FIFO)")) << r.err;
  EXPECT_TRUE(Contains(r.err, "/dev/zero: not read: not a regular file (a character device)"))
      << r.err;
  EXPECT_TRUE(Contains(r.err, "2 source files were not read: not regular files")) << r.err;
  const ProcessResult g = RunProcess({INPROF_VIEWER, "grep", "x", profile}, {});
  EXPECT_EQ(g.exit_code, 1) << g.err;
  EXPECT_TRUE(Contains(g.err, "2 source files were not read: not regular files")) << g.err;
}

// One column per second: samples a hundred million seconds apart (and one past what 64 bits
// of nanoseconds hold, which the reader keeps at that limit) once asked for as many columns
// (bad_alloc). The page is bounded; the message says how to pick a part.
TEST(ViewerHostileInput, TimelineOfAHugeTimeSpanIsRefusedWithAdvice) {
  const std::string dir = MakeTempDir();
  const std::string script = dir + "/far.perf-script";
  Write(script,
        "prog 7 1.000000: 1 cpu-clock:\n\t7f00 early (/bin/x)\n\n"
        "prog 7 99999999.000000: 1 cpu-clock:\n\t7f00 late (/bin/x)\n\n"
        "prog 7 99999999999999999999999.000000: 1 cpu-clock:\n\t7f00 latest (/bin/x)\n");
  const auto start = std::chrono::steady_clock::now();
  for (const char* out : {"t.html", "t.svg"}) {
    const ProcessResult r =
        RunProcess({INPROF_VIEWER, "timeline", script, "-o", dir + "/" + out}, {});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(Contains(r.err, script + ": the samples span ")) << r.err;
    EXPECT_TRUE(Contains(r.err, "at most 100000: choose a part with --from and --to")) << r.err;
    EXPECT_EQ(access((dir + "/" + out).c_str(), F_OK), -1) << "nothing written";
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  // The part the message asks for: around the second sample (99999998 s after the first).
  const ProcessResult part = RunProcess({INPROF_VIEWER, "timeline", "--from", "99999997", "--to",
                                         "99999999", script, "-o", dir + "/part.svg"},
                                        {});
  EXPECT_EQ(part.exit_code, 0) << part.err;
  EXPECT_TRUE(Contains(ReadFile(dir + "/part.svg"), "samples over 2 s"))
      << ReadFile(dir + "/part.svg").substr(0, 2000);
}

// A raw profile names the files to symbolize with: a FIFO there (at the recorded path, or
// where --debug-dir is searched by name) must not hang symbolize-profile waiting for a writer.
TEST(ViewerHostileInput, RawProfileNamingAFifoDoesNotHangSymbolization) {
  const std::string dir = MakeTempDir();
  ASSERT_EQ(mkfifo((dir + "/pipe").c_str(), 0600), 0);
  mkdir((dir + "/debug").c_str(), 0700);
  ASSERT_EQ(mkfifo((dir + "/debug/libgone.so").c_str(), 0600), 0);
  const std::string raw = dir + "/p.inprofraw";
  Write(raw,
        "inprof-raw 1\nmeta pid 77\nmeta comm prog\nevent cpu nanoseconds 10101010 99 8\n"
        "module exe 555555554000 - " +
            dir +
            "/pipe\n"
            "segment 555555555000 555555556000 1000 x\n"
            "module so 7f0000000000 0102030405060708 /nonexistent-inprof/libgone.so\n"
            "segment 7f0000001000 7f0000002000 1000 x\n"
            "thread 77 prog\nstack 5 555555555123 t77\nstack 3 7f0000001123 t77\nend\n");
  // timeout(1) turns a hang into exit status 124 instead of a stuck test (natively: under
  // the cross lane's emulator RunProcess would run the host's timeout as a guest program).
  std::vector<std::string> argv;
  if (EmulatorPrefix().empty()) argv = {"/usr/bin/timeout", "60"};
  for (const std::string& word :
       {std::string(INPROF_VIEWER), std::string("symbolize-profile"), std::string("--debug-dir"),
        dir + "/debug", raw, std::string("-o"), dir + "/out"}) {
    argv.push_back(word);
  }
  const auto start = std::chrono::steady_clock::now();
  const ProcessResult r = RunProcess(argv, {});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_TRUE(Contains(r.err, dir + "/pipe: not a regular file (a FIFO)")) << r.err;
  EXPECT_TRUE(Contains(r.err, "/nonexistent-inprof/libgone.so: ")) << r.err;
  // The samples are kept, as module offsets.
  EXPECT_TRUE(Contains(ReadFile(dir + "/out/profile.folded"), "pipe+0x")) << r.err;
}

TEST(ViewerHostileInput, SourceFilesOverTheCapAreSkippedByName) {
  const std::string dir = MakeTempDir();
  Write(dir + "/big.cpp", std::string(100, 'x') + "\n");
  const std::string profile = dir + "/p.folded";
  Write(profile, "main (" + dir + "/big.cpp:1) 5\n");
  const ProcessResult r =
      RunProcess({INPROF_VIEWER, "annotate", profile}, {{"INPROF_MAX_SOURCE_BYTES", "64"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(Contains(r.out, "xxxx")) << r.out;
  EXPECT_TRUE(Contains(r.err, dir + "/big.cpp: not read: larger than the 64 bytes source file "
                                    "limit (INPROF_MAX_SOURCE_BYTES)"))
      << r.err;
}

TEST(ViewerHostileInput, ProfilesComeFromFilesAndPipesOnly) {
  const std::string dir = MakeTempDir();
  const std::string profile = dir + "/p.folded";
  Write(profile, "main;work 3\nmain 1\n");
  // A pipe: standard input, and bash's process substitution where bash is installed.
  const ProcessResult piped = RunProcess(
      {"/bin/sh", "-c", "cat '" + profile + "' | " + ViewerCommand() + " top /dev/stdin"}, {});
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_TRUE(Contains(piped.out, "work")) << piped.out;
  if (access("/bin/bash", X_OK) == 0) {
    const ProcessResult substituted =
        RunProcess({"/bin/bash", "-c", ViewerCommand() + " top <(cat '" + profile + "')"}, {});
    EXPECT_EQ(substituted.exit_code, 0) << substituted.err;
    EXPECT_TRUE(Contains(substituted.out, "work")) << substituted.out;
  }
  const ProcessResult zero = RunProcess({INPROF_VIEWER, "top", "/dev/zero"}, {});
  EXPECT_EQ(zero.exit_code, 1);
  EXPECT_EQ(zero.err,
            "inprof: cannot read /dev/zero: it is a character device, not a file or a pipe\n");
  const ProcessResult directory = RunProcess({INPROF_VIEWER, "top", dir}, {});
  EXPECT_EQ(directory.exit_code, 1);
  EXPECT_EQ(directory.err,
            "inprof: cannot read " + dir + ": it is a directory, not a file or a pipe\n");
  const ProcessResult capped =
      RunProcess({INPROF_VIEWER, "top", profile}, {{"INPROF_MAX_PROFILE_BYTES", "8"}});
  EXPECT_EQ(capped.exit_code, 1);
  EXPECT_EQ(capped.err, "inprof: cannot read " + profile +
                            ": it is larger than the 8 bytes a profile may have "
                            "(INPROF_MAX_PROFILE_BYTES raises it)\n");
  const ProcessResult capped_pipe = RunProcess(
      {"/bin/sh", "-c", "cat '" + profile + "' | " + ViewerCommand() + " top /dev/stdin"},
      {{"INPROF_MAX_PROFILE_BYTES", "8"}});
  EXPECT_EQ(capped_pipe.exit_code, 1);
  EXPECT_TRUE(Contains(capped_pipe.err, "gives more than the 8 bytes a profile may have"))
      << capped_pipe.err;
}

// A recursive reader would overflow its stack on 100,000 nested arrays; this one stops at the
// documented depth and says where.
TEST(ViewerHostileInput, DeepJsonNestingIsAClearError) {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/deep.json";
  Write(path, "{\"format\":\"inprof-annotations\",\"version\":1,\"x\":" + std::string(100000, '[') +
                  std::string(100000, ']') + "}\n");
  for (const char* command : {"top", "annotate", "heat"}) {
    const ProcessResult r = RunProcess({INPROF_VIEWER, command, path}, {});
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_EQ(r.err, "inprof: " + path + ":1: expected at most 64 levels of nesting\n") << command;
    EXPECT_EQ(r.out, "") << command;
  }
}

// Every sample keeps a weight per event: 300 samples naming 300 events would be 90,000
// weights, and a 1 MB file of them gigabytes. Real recordings have a few events.
TEST(ViewerHostileInput, ThousandsOfEventsAreRefusedByLine) {
  const std::string dir = MakeTempDir();
  std::string script, report;
  for (int i = 0; i < 300; ++i) {
    script += "w 1  1." + std::to_string(100000 + i) + ":    1 e" + std::to_string(i) +
              ": \n\t    117c leaf+0x1c (/w)\n\n";
    report += "# Samples: 1  of event 'e" + std::to_string(i) + "'\n1 main;leaf\n";
  }
  Write(dir + "/many.perf-script", script);
  Write(dir + "/many.report", report);
  const ProcessResult s = RunProcess({INPROF_VIEWER, "top", dir + "/many.perf-script"}, {});
  EXPECT_EQ(s.exit_code, 1);
  EXPECT_EQ(s.err, "inprof: " + dir +
                       "/many.perf-script:769: expected at most 256 distinct events (this "
                       "sample names one more) (read as perf script output)\n");
  const ProcessResult r = RunProcess({INPROF_VIEWER, "top", dir + "/many.report"}, {});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "inprof: " + dir +
                       "/many.report:513: expected at most 256 distinct events (this header "
                       "names one more) (read as perf report output)\n");
}

// std::regex recurses once per character its quantifiers consume: a 200,000-character hot
// line overflowed the stack. Such lines are matched with -F, and otherwise reported.
TEST(ViewerHostileInput, GrepOnVeryLongLinesDoesNotCrash) {
  const std::string dir = MakeTempDir();
  Write(dir + "/min.js", "a\n" + std::string(200000, 'a') + "needle\n");
  const std::string profile = dir + "/p.folded";
  Write(profile, "main (" + dir + "/min.js:2) 5\n");
  const ProcessResult regex = RunProcess({INPROF_VIEWER, "grep", "(?:a|b)*needle", profile}, {});
  EXPECT_EQ(regex.exit_code, 1) << regex.err;
  EXPECT_EQ(regex.term_signal, 0);
  EXPECT_TRUE(Contains(regex.err,
                       "1 hot line was longer than 4096 bytes and not matched (first "
                       "in " +
                           dir + "/min.js); -F matches lines of any length"))
      << regex.err;
  const ProcessResult fixed =
      RunProcess({INPROF_VIEWER, "grep", "--json", "-F", "needle", profile}, {});
  EXPECT_EQ(fixed.exit_code, 0) << fixed.err;
  EXPECT_TRUE(Contains(fixed.out, "\"line\":2,\"matches\":[[200000,200006]]")) << fixed.out;
  const ProcessResult word_json =
      RunProcess({INPROF_VIEWER, "grep", "--json", "-F", "-w", "needle", profile}, {});
  EXPECT_EQ(word_json.exit_code, 1) << "'aaaneedle' has no word 'needle': " << word_json.out;
}

// `heat` matched every line of a file against every function of it: a file of 200,000
// one-line functions (a generated parser, or a profile built to be slow) took three CPU
// minutes. Grouped once, it takes about a second; the bound leaves room for sanitizers.
TEST(ViewerHostileInput, HeatOnTwoHundredThousandFunctionsInOneFileIsLinear) {
  const std::string dir = MakeTempDir();
  const std::string profile = dir + "/many.folded";
  {
    std::ofstream out(profile);
    for (int i = 0; i < 200000; ++i) {
      out << "main (/s/a.cpp:1);f" << i << " (/s/b.cpp:" << i + 1 << ") 1\n";
    }
  }
  const auto start = std::chrono::steady_clock::now();
  const ProcessResult r = RunProcess({INPROF_VIEWER, "heat", "--no-progress", profile}, {});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "f199999 (/s/b.cpp)\n  line 200000: ")) << r.out.substr(0, 300);
  EXPECT_LT(seconds, 60.0);
}

// A search tool's output line without end must not take all memory: it is dropped and counted.
TEST(ViewerHostileInput, HotDropsInputLinesOverSixteenMiB) {
  const std::string dir = MakeTempDir();
  Write(dir + "/a.cpp", "int x;\nint hot_line;\n");
  const std::string profile = dir + "/p.folded";
  Write(profile, "main (" + dir + "/a.cpp:2) 5\n");
  const ProcessResult r = RunProcess({"/bin/sh", "-c",
                                      "{ head -c 17000000 /dev/zero | tr '\\0' a; echo; echo '" +
                                          dir + "/a.cpp:2:int hot_line;'; } | " + ViewerCommand() +
                                          " hot --color=never '" + profile + "'"},
                                     {});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "a.cpp:2:")) << r.out.substr(0, 200);
  EXPECT_EQ(r.err, "inprof: 1 input line was longer than 16 MiB and skipped\n");
}

}  // namespace
}  // namespace inprof::test
