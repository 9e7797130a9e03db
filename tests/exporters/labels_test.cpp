// Labels the program set on its threads, in the aggregated outputs: their totals in the
// annotation model and JSON (written, read back, refused when malformed), and the extra root
// frame of folded stacks (ExportOptions::folded_root). pprof's labels are checked with the
// protobuf decoder and `go tool pprof` in pprof_test.cpp.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "inprof/annotation_json.h"
#include "inprof/folded.h"
#include "test_profiles.h"
#include "test_support.h"

namespace inprof::test {
namespace {

std::string Json(const Annotations& a) {
  std::ostringstream out;
  WriteAnnotationJson(a, out);
  return out.str();
}

std::string Folded(const Profile& p, const std::string& root, bool lines = false) {
  ExportOptions options;
  options.folded_root = root;
  options.folded_lines = lines;
  std::ostringstream out;
  WriteFolded(p, options, out);
  return out.str();
}

// Two events; endpoints /a and /b at 3:1 on cpu (with a tenant on part of /a), an unlabelled
// sample, and a labelled sample without weight (it must not appear anywhere).
Profile LabelledProfile() {
  ProfileBuilder b;
  b.AddEvent("wall", "nanoseconds");
  const uint32_t main = b.Frame("main", "/src/main.cpp", 10);
  const uint32_t serve = b.Frame("serve", "/src/serve.cpp", 20);
  const uint32_t idle = b.Frame("idle", "/src/idle.cpp", 30);
  b.Sample({main, serve}, {25, 3});  // set 1: endpoint=/a, tenant=t1
  b.Sample({main, serve}, {5, 0});   // set 3: endpoint=/a
  b.Sample({main, serve}, {10, 1});  // set 2: endpoint=/b
  b.Sample({main, idle}, {7, 70});   // no labels
  b.Sample({main, idle}, {0, 0});    // set 4: endpoint=/c, weightless
  Profile p = b.profile();
  p.label_sets = {{{"endpoint", "/a"}, {"tenant", "t1"}},
                  {{"endpoint", "/b"}},
                  {{"endpoint", "/a"}},
                  {{"endpoint", "/c"}}};
  p.samples[0].labels = 1;
  p.samples[1].labels = 3;
  p.samples[2].labels = 2;
  p.samples[4].labels = 4;
  return p;
}

TEST(LabelTotals, EachLabelGetsTheWeightOfTheSamplesThatCarriedIt) {
  const Annotations a = BuildAnnotations(LabelledProfile());
  EXPECT_EQ(a.labels, (std::vector<LabelTotal>{{"endpoint", "/a", {30, 3}},
                                               {"endpoint", "/b", {10, 1}},
                                               {"tenant", "t1", {25, 3}}}));
  // The endpoints' shares of cpu: 3:1, out of a total that also holds the unlabelled 7.
  EXPECT_EQ(a.events[0].total_weight, 47);
}

TEST(LabelTotals, ASetIndexOutOfRangeCountsForNoLabel) {
  Profile p = LabelledProfile();
  p.samples[2].labels = 9;
  const Annotations a = BuildAnnotations(p);
  EXPECT_EQ(a.labels,
            (std::vector<LabelTotal>{{"endpoint", "/a", {30, 3}}, {"tenant", "t1", {25, 3}}}));
}

TEST(LabelsJson, WrittenSortedOnePerLineAndReadBack) {
  const Annotations a = BuildAnnotations(LabelledProfile());
  const std::string json = Json(a);
  // After "hottest_lines" and before "metadata": keys stay sorted.
  EXPECT_NE(json.find("],\n\"labels\":[\n"
                      "{\"key\":\"endpoint\",\"value\":\"/a\",\"weight\":[30,3]},\n"
                      "{\"key\":\"endpoint\",\"value\":\"/b\",\"weight\":[10,1]},\n"
                      "{\"key\":\"tenant\",\"value\":\"t1\",\"weight\":[25,3]}],\n"
                      "\"metadata\":{"),
            std::string::npos)
      << json;
  Annotations back;
  const Status s = ReadAnnotationJson(json, "labels.json", &back);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(back.labels, a.labels);
  EXPECT_EQ(Json(back), json) << "write, read, write gives the same bytes";
}

TEST(LabelsJson, AProfileWithoutLabelsWritesNoLabelsMember) {
  // Label sets no sample uses, or whose samples have no weight, leave the file as it was.
  Profile p = GoldenProfile();
  const std::string before = Json(BuildAnnotations(p));
  p.label_sets = {{{"endpoint", "/unused"}}};
  EXPECT_EQ(Json(BuildAnnotations(p)), before);
  p.samples.back().labels = 1;  // the sleeping sample: wall only
  p.samples.back().weights = {0, 0};
  EXPECT_EQ(Json(BuildAnnotations(p)).find("\"labels\""), std::string::npos);
  EXPECT_EQ(before.find("\"labels\""), std::string::npos);
}

TEST(LabelsJson, FilesWithoutLabelsStillRead) {
  std::ifstream in(Data("annotation_json/basic.json"));
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_FALSE(text.str().empty());
  Annotations a;
  const Status s = ReadAnnotationJson(text.str(), "basic.json", &a);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(a.labels.empty());
  EXPECT_EQ(Json(a), text.str());
}

TEST(LabelsJson, ReaderSortsEntriesAndSkipsUnknownMembers) {
  const std::string json =
      "{\"format\":\"inprof-annotations\",\"version\":1,\"events\":[{\"name\":\"cpu\"}],\n"
      "\"labels\":[\n"
      "{\"value\":\"/b\",\"key\":\"endpoint\",\"weight\":[1],\"share\":0.25},\n"
      "{\"key\":\"endpoint\",\"value\":\"/a\",\"weight\":[3]},\n"
      "{\"key\":\"a\",\"value\":\"\",\"weight\":[4]}]}";
  Annotations a;
  const Status s = ReadAnnotationJson(json, "x.json", &a);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(a.labels, (std::vector<LabelTotal>{
                          {"a", "", {4}}, {"endpoint", "/a", {3}}, {"endpoint", "/b", {1}}}));
}

TEST(LabelsJson, InvalidUtf8ValuesAreRepairedAndStillListedOnce) {
  // Two values that differ only in invalid bytes become the same text when written: the file
  // lists the pair once, with both weights, and reads back to itself.
  Annotations a = BuildAnnotations(LabelledProfile());
  a.labels = {{"endpoint", "/x\xff", {1, 0}}, {"endpoint", "/x\xfe", {2, 0}}};
  const std::string json = Json(a);
  EXPECT_NE(json.find("{\"key\":\"endpoint\",\"value\":\"/x\xEF\xBF\xBD\",\"weight\":[3,0]}]"),
            std::string::npos)
      << json;
  Annotations back;
  const Status s = ReadAnnotationJson(json, "x.json", &back);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(back.labels.size(), 1u);
  EXPECT_EQ(Json(back), json);
}

struct BadLabels {
  const char* labels;   // the value of "labels", starting on line 2
  const char* message;  // expected "bad.json:LINE: ..." prefix
};

class LabelsJsonErrors : public ::testing::TestWithParam<BadLabels> {};

TEST_P(LabelsJsonErrors, NameTheLineAndWhatWasExpected) {
  const std::string json =
      std::string(
          "{\"format\":\"inprof-annotations\",\"version\":1,\"events\":[{\"name\":\"cpu\"}],\n"
          "\"labels\":") +
      GetParam().labels + "}";
  Annotations a;
  const Status s = ReadAnnotationJson(json, "bad.json", &a);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind(GetParam().message, 0), 0u) << s.message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, LabelsJsonErrors,
    ::testing::Values(
        BadLabels{"{}", "bad.json:2: expected an array"},
        BadLabels{
            "[\n{\"key\":\"k\",\"value\":\"v\",\"weight\":[1]},\n{\"key\":\"k\",\"weight\":[1]}]",
            "bad.json:4: expected a label as {\"key\""},
        BadLabels{"[\n{\"key\":\"k\",\"value\":7,\"weight\":[1]}]",
                  "bad.json:3: expected a string"},
        BadLabels{"[\n{\"key\":\"k\",\"value\":\"v\",\"weight\":[\"1\"]}]",
                  "bad.json:3: expected an integer"},
        BadLabels{"[\n{\"key\":\"k\",\"value\":\"v\",\"weight\":[1]},\n"
                  "{\"key\":\"j\",\"value\":\"v\",\"weight\":[1]},\n"
                  "{\"key\":\"k\",\"value\":\"v\",\"weight\":[2]}]",
                  "bad.json:5: expected each label once, got k=v twice"},
        BadLabels{"[\n{\"key\":\"k\",\"value\":\"v\",\"weight\":[1,2]}]",
                  "bad.json:3: expected 1 values (one per event) in label k=v"},
        BadLabels{"[\n{\"key\":\"k\",\"value\":\"v\"}]",
                  "bad.json:3: expected 1 values (one per event) in label k=v"}));

// ---------------------------------------------------------------------------------------------
// Folded stacks with a root frame per thread or per label value.

// Same check as the golden folded files: every line is one flamegraph.pl reads.
void ExpectReadable(const std::string& text) {
  const std::regex flamegraph_pl(R"(^(.*)\s+?(\d+)$)");
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    EXPECT_TRUE(std::regex_match(line, flamegraph_pl)) << line;
  }
  Profile back;
  const Status s = ReadFolded(text, "roots.folded", &back);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(FoldedRoot, NoneByDefaultAndForValuesItDoesNotKnow) {
  const Profile p = LabelledProfile();
  const std::string plain = Folded(p, "");
  EXPECT_EQ(plain, "main;idle 7\nmain;serve 40\n");
  EXPECT_EQ(Folded(p, "label:"), plain);
  EXPECT_EQ(Folded(p, "threads"), plain);
}

TEST(FoldedRoot, LabelValueIsTheRootAndSamplesWithoutItShareOne) {
  Profile p = LabelledProfile();
  // /a comes from two label sets (with and without a tenant): one line.
  EXPECT_EQ(Folded(p, "label:endpoint"),
            "/a;main;serve 30\n"
            "/b;main;serve 10\n"
            "[no endpoint];main;idle 7\n");
  EXPECT_EQ(Folded(p, "label:tenant"),
            "[no tenant];main;idle 7\n"
            "[no tenant];main;serve 15\n"
            "t1;main;serve 25\n");
  // Other events and the line format keep the root.
  ExportOptions wall;
  wall.event = 1;
  wall.folded_root = "label:endpoint";
  std::ostringstream out;
  WriteFolded(p, wall, out);
  EXPECT_EQ(out.str(), "/a;main;serve 3\n/b;main;serve 1\n[no endpoint];main;idle 70\n");
  EXPECT_EQ(Folded(p, "label:endpoint", true),
            "/a;main (/src/main.cpp:10);serve (/src/serve.cpp:20) 30\n"
            "/b;main (/src/main.cpp:10);serve (/src/serve.cpp:20) 10\n"
            "[no endpoint];main (/src/main.cpp:10);idle (/src/idle.cpp:30) 7\n");
}

TEST(FoldedRoot, ThreadNameIsTheRootWithTheTidWhenUnnamed) {
  Profile p = LabelledProfile();
  p.samples[0].tid = 100;  // named in the profile's list (and, older, in the health's)
  p.samples[1].tid = 101;  // named only in the health's list
  p.samples[2].tid = 102;  // same name as 100: merged
  p.samples[3].tid = 103;  // unnamed
  p.threads = {{100, "worker"}, {102, "worker"}};
  p.health.threads = {{100, "old", 0, 0, 0, 0}, {101, "io", 0, 0, 0, 0}};
  const std::string text = Folded(p, "thread");
  EXPECT_EQ(text,
            "103;main;idle 7\n"
            "io;main;serve 5\n"
            "worker;main;serve 35\n");
  ExpectReadable(text);
  p.samples[3].tid = 0;  // not recorded
  EXPECT_EQ(Folded(p, "thread"),
            "[no thread];main;idle 7\n"
            "io;main;serve 5\n"
            "worker;main;serve 35\n");
}

TEST(FoldedRoot, RootsAreEscapedLikeFrames) {
  ProfileBuilder b;
  const uint32_t f = b.Frame("f", "/src/f.cpp", 1);
  b.Sample({f}, {1});
  b.Sample({f}, {2});
  b.Sample({f}, {4});
  b.Sample({}, {8});  // no frames: the root over [unknown]
  Profile p = b.profile();
  p.label_sets = {{{"k", "a;b\nc"}}, {{"k", "worker 2"}}, {{"k", "call (x.cpp:3)"}}};
  for (uint32_t i = 0; i < 3; ++i) p.samples[i].labels = i + 1;
  p.samples[3].labels = 2;
  const std::string text = Folded(p, "label:k");
  // ';' would split the stack and a newline the line; a number-like last word would be taken
  // for a second count by inferno.
  EXPECT_EQ(text,
            "a:b c;f 1\n"
            "call (x.cpp:3);f 4\n"
            "worker_2;[unknown] 8\n"
            "worker_2;f 2\n");
  ExpectReadable(text);
  // With lines, a root that looks like "function (file:line)" must not read back as one.
  const std::string lines = Folded(p, "label:k", true);
  EXPECT_NE(lines.find("call _(x.cpp:3);f (/src/f.cpp:1) 4\n"), std::string::npos) << lines;
  ExpectReadable(lines);
  Profile back;
  ASSERT_TRUE(ReadFolded(lines, "x.folded", &back).ok());
  for (const Frame& frame : back.frames) {
    if (frame.function.starts_with("call")) {
      EXPECT_FALSE(frame.has_source()) << frame.file;
    }
  }
  // A key with ';' in it is escaped in "[no KEY]" too.
  EXPECT_EQ(Folded(p, "label:x;y"), "[no x:y];[unknown] 8\n[no x:y];f 7\n");
}

}  // namespace
}  // namespace inprof::test
