// --hide REGEX at the command line: frames leave every stack and their weight lands on the
// caller, as pprof's -hide does. The input is what an allocation profile of a C++ program
// looks like: folded stacks with lines whose every leaf is the standard library's allocator,
// so without --hide `top` puts all the self weight on new_allocator.h.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "test_support.h"
#include "test_util.h"

namespace inprof::test {
namespace {

ProcessResult Viewer(std::vector<std::string> args) {
  args.insert(args.begin(), INPROF_VIEWER);
  return RunProcess(args, {});
}

// 1000 bytes: load's line 20 allocates 600 through std::vector, parse's line 50 300 straight
// from the allocator (its inlined helper fill is part of the vector constructor's frame), and
// load's line 21 100 itself. So with ^std:: hidden: line 20 60 %, parse's fill line 41 30 %,
// line 21 10 %.
constexpr const char* kAllocFolded =
    "main (/src/app.cpp:10);load(Reader&) (/src/app.cpp:20);"
    "std::vector<unsigned char, std::allocator<unsigned char> >::vector(unsigned long) "
    "(/usr/include/c++/12/bits/stl_vector.h:557);"
    "std::__new_allocator<unsigned char>::allocate(unsigned long, void const*) "
    "(/usr/include/c++/12/bits/new_allocator.h:137) 600\n"
    "main (/src/app.cpp:11);parse(std::string const&) (/src/app.cpp:50);"
    "std::vector<int, std::allocator<int> >::vector(unsigned long) "
    "(/usr/include/c++/12/bits/stl_vector.h:557);"
    "fill(std::vector<int>&) (/src/app.cpp:41)_[i];"
    "std::__new_allocator<int>::allocate(unsigned long, void const*) "
    "(/usr/include/c++/12/bits/new_allocator.h:137) 300\n"
    "main (/src/app.cpp:10);load(Reader&) (/src/app.cpp:21) 100\n";

class HideTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    folded_ = dir_ + "/heap.folded";
    std::ofstream(folded_) << kAllocFolded;
  }
  std::string dir_, folded_;
};

TEST_F(HideTest, TopPutsTheAllocatorsWeightOnTheCallersLines) {
  ProcessResult r = Viewer({"top", folded_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" 90.00%   90.00%  /usr/include/c++/12/bits/new_allocator.h:137"),
            std::string::npos)
      << r.out;

  r = Viewer({"top", "--hide", "^std::", folded_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The header says what was hidden; the total is the same.
  EXPECT_NE(r.out.find("total 1000; ranked by self; hiding ^std:: (their weight is their "
                       "callers')\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(" 60.00%   60.00%  /src/app.cpp:20  load\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 30.00%   30.00%  /src/app.cpp:41  fill\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 10.00%   10.00%  /src/app.cpp:21  load\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("new_allocator"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("stl_vector"), std::string::npos) << r.out;

  // --json: the same numbers, every event's total kept.
  r = Viewer(
      {"top", "--json", "--absolute", "--hide", "^std::__new", "--hide", "^std::vector", folded_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"total\":1000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"line\":20,\"local_heat\":5,\"self\":600}"), std::string::npos) << r.out;

  // A pattern that matches nothing changes nothing.
  const std::string plain = Viewer({"top", folded_}).out;
  r = Viewer({"top", "--hide", "^boost::", folded_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(r.out.find("Hottest lines")), plain.substr(plain.find("Hottest lines")));
}

// A function template's demangled name starts with its return type; top shows it without,
// and ^std:: hides it as shown.
TEST_F(HideTest, FunctionTemplatesHideByTheirShownName) {
  const std::string folded = dir_ + "/copy.folded";
  std::ofstream(folded) << "main (/src/app.cpp:12);copy_rows(Table&) (/src/app.cpp:60);"
                           "unsigned char* std::__do_uninit_copy<unsigned char const*, unsigned "
                           "char*>(unsigned char const*, unsigned char const*, unsigned char*) "
                           "(/usr/include/c++/12/bits/stl_uninitialized.h:120) 8\n"
                           "main (/src/app.cpp:13) 2\n";
  ProcessResult r = Viewer({"top", folded});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" 80.00%  std::__do_uninit_copy  "), std::string::npos) << r.out;
  r = Viewer({"top", "--hide", "^std::", folded});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" 80.00%   80.00%  /src/app.cpp:60  copy_rows\n"), std::string::npos)
      << r.out;
  // The full name is matched too: its template arguments.
  r = Viewer({"top", "--hide", "copy<unsigned char const\\*", folded});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" 80.00%   80.00%  /src/app.cpp:60  copy_rows\n"), std::string::npos)
      << r.out;
}

TEST_F(HideTest, EverythingHiddenStaysCounted) {
  const ProcessResult r = Viewer({"top", "--absolute", "--hide", ".", folded_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("total 1000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1000  [hidden]"), std::string::npos) << r.out;
}

TEST_F(HideTest, OtherCommandsSeeTheHiddenStacks) {
  // A flame graph says in its subtitle what was hidden; the allocator's boxes are gone.
  const std::string svg = dir_ + "/heap.svg";
  ProcessResult r = Viewer({"flame", "--hide", "^std::", "-o", svg, folded_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = ReadFile(svg);
  EXPECT_NE(text.find("hiding ^std::"), std::string::npos);
  EXPECT_EQ(text.find("new_allocator"), std::string::npos);
  // callers: fill is now called by parse itself.
  r = Viewer({"callers", "--hide", "^std::", "fill", folded_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("30.00%  parse"), std::string::npos) << r.out;
  // convert writes what it shows: stacks without the hidden frames.
  const std::string out = dir_ + "/hidden.folded";
  r = Viewer({"convert", "--hide", "^std::", folded_, "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadFile(out),
            "main;load(Reader&) 700\n"
            "main;parse(std::string const&);fill(std::vector<int>&) 300\n");
}

TEST_F(HideTest, BadPatternsAreUsageErrors) {
  ProcessResult r = Viewer({"top", "--hide", "std::vector<(int", folded_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("inprof: --hide 'std::vector<(int' is not a regular expression: "),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty());
  r = Viewer({"top", "--hide", "", folded_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--hide needs a regular expression"), std::string::npos) << r.err;
  // The commands with their own option parsing check it too.
  r = Viewer({"timeline", "--hide", "a[", folded_, "-o", dir_ + "/t.svg"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--hide 'a[' is not a regular expression"), std::string::npos) << r.err;
  r = Viewer({"hot", "--hide", "a[", folded_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--hide 'a[' is not a regular expression"), std::string::npos) << r.err;
}

TEST_F(HideTest, AnnotationJsonHasNoStacksToHideFrom) {
  const std::string json = dir_ + "/heap.json";
  ASSERT_EQ(Viewer({"convert", folded_, "-o", json}).exit_code, 0);
  const ProcessResult r = Viewer({"top", "--hide", "^std::", json});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(json + ": annotation JSON keeps totals per source line, not stacks, so "
                              "--hide '^std::' cannot move"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty());
}

}  // namespace
}  // namespace inprof::test
