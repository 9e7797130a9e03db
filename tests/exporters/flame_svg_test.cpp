// Flame graph SVG writer: golden files (INPROF_BLESS=1 rewrites them), the tree behind the
// boxes, elision, escaping, colours, the icicle layout, the differential graph and errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "flame_xml.h"
#include "inprof/flame.h"
#include "inprof/formats.h"
#include "test_profiles.h"
#include "test_support.h"

namespace inprof::test {
namespace {

std::string Svg(const Profile& profile, const FlameOptions& options = {}) {
  std::string svg;
  const Status s = WriteFlameSvg(profile, options, &svg);
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(XmlWellFormedError(svg), "");
  return svg;
}

const FlameBox* Find(const std::vector<FlameBox>& boxes, const std::string& name, uint64_t depth) {
  for (const FlameBox& box : boxes) {
    if (box.name == name && box.depth == depth) return &box;
  }
  return nullptr;
}

// Before/after profiles for the differential graph: `parse` got hotter, `compress` colder,
// `io` unchanged once `before` is scaled to `after`'s total (before has half the samples).
void DiffProfiles(Profile* before, Profile* after) {
  ProfileBuilder b, a;
  const uint32_t b_main = b.Frame("main"), b_parse = b.Frame("parse"),
                 b_compress = b.Frame("compress"), b_io = b.Frame("io");
  b.Sample({b_main, b_parse}, {10});
  b.Sample({b_main, b_compress}, {30});
  b.Sample({b_main, b_io}, {10});
  const uint32_t a_main = a.Frame("main"), a_parse = a.Frame("parse"),
                 a_compress = a.Frame("compress"), a_io = a.Frame("io");
  a.Sample({a_main, a_parse}, {50});
  a.Sample({a_main, a_compress}, {30});
  a.Sample({a_main, a_io}, {20});
  *before = b.profile();
  *after = a.profile();
}

TEST(FlameSvgGolden, Basic) { CheckGolden("flame/basic.svg", Svg(GoldenProfile())); }

TEST(FlameSvgGolden, InvertedSecondEventNarrow) {
  FlameOptions options;
  options.event = 1;
  options.inverted = true;
  options.width = 400;
  options.min_width = 2;
  options.title = "wall <clock> & \"friends\"";
  CheckGolden("flame/inverted_wall.svg", Svg(GoldenProfile(), options));
}

TEST(FlameSvgGolden, Diff) {
  Profile before, after;
  DiffProfiles(&before, &after);
  std::string svg;
  ASSERT_TRUE(WriteDiffFlameSvg(before, after, {}, &svg).ok());
  EXPECT_EQ(XmlWellFormedError(svg), "");
  CheckGolden("flame/diff.svg", svg);
}

TEST(FlameSvg, SelfContained) {
  const std::string svg = Svg(GoldenProfile());
  for (const char* external : {"href=", "src=", "url(http", "@import", "<link", "xlink"}) {
    EXPECT_EQ(svg.find(external), std::string::npos) << external;
  }
  EXPECT_NE(svg.find("<script type=\"text/ecmascript\"><![CDATA["), std::string::npos);
  EXPECT_NE(svg.find("<style type=\"text/css\">"), std::string::npos);
}

TEST(FlameSvg, BoxesAreTheMergedTree) {
  ProfileBuilder b;
  const uint32_t main = b.Frame("main"), a = b.Frame("a"), bb = b.Frame("b"), c = b.Frame("c");
  const uint32_t a2 = b.Frame("a");  // another address of `a`: merges by name
  b.Sample({main, bb, c}, {5});
  b.Sample({main, a}, {3});
  b.Sample({main, a2, c}, {4});
  b.Sample({main}, {2});
  b.Sample({c}, {1});  // another root
  const std::vector<FlameBox> boxes = FlameBoxes(Svg(b.profile()));

  ASSERT_FALSE(boxes.empty());
  EXPECT_EQ(boxes[0].title, "all (15 samples, 100%)");
  EXPECT_EQ(boxes[0].w, 15u);
  const FlameBox* m = Find(boxes, "main", 1);
  const FlameBox* ma = Find(boxes, "a", 2);
  const FlameBox* mb = Find(boxes, "b", 2);
  const FlameBox* root_c = Find(boxes, "c", 1);
  ASSERT_TRUE(m && ma && mb && root_c);
  EXPECT_EQ(m->title, "main (14 samples, 93.33%)");
  EXPECT_EQ(ma->w, 7u);
  EXPECT_EQ(mb->w, 5u);
  // Children in name order from their parent's start: a, then b; the root's: c, then main.
  EXPECT_EQ(root_c->x, 0u);
  EXPECT_EQ(m->x, 1u);
  EXPECT_EQ(ma->x, 1u);
  EXPECT_EQ(mb->x, 8u);
  // Both `c` under main are separate boxes (different callers).
  size_t c_boxes = 0;
  for (const FlameBox& box : boxes) c_boxes += box.name == "c";
  EXPECT_EQ(c_boxes, 3u);
  // Pixels follow samples: 1180 px for 15 samples, flame graphs grow upwards.
  EXPECT_NEAR(m->rect_width, 1180.0 * 14 / 15, 0.01);
  EXPECT_NEAR(m->rect_x, 10 + 1180.0 / 15, 0.01);
  EXPECT_LT(ma->rect_y, m->rect_y);
  EXPECT_LT(m->rect_y, boxes[0].rect_y);
}

TEST(FlameSvg, OutputDoesNotDependOnSampleOrder) {
  ProfileBuilder forward, backward;
  std::vector<std::vector<std::string>> stacks = {
      {"main", "z"}, {"main", "a", "x"}, {"main", "m"}, {"other"}, {"main", "a", "b"}};
  for (size_t i = 0; i < stacks.size(); ++i) {
    std::vector<uint32_t> f, g;
    for (const std::string& name : stacks[i]) f.push_back(forward.Frame(name));
    for (const std::string& name : stacks[stacks.size() - 1 - i]) g.push_back(backward.Frame(name));
    forward.Sample(f, {static_cast<int64_t>(i + 1)});
    backward.Sample(g, {static_cast<int64_t>(stacks.size() - i)});
  }
  EXPECT_EQ(Svg(forward.profile()), Svg(backward.profile()));
}

TEST(FlameSvg, NarrowBoxesAreLeftOutButCountsStayExact) {
  ProfileBuilder b;
  const uint32_t main = b.Frame("main"), big = b.Frame("big"), tiny = b.Frame("tiny"),
                 deeper = b.Frame("deeper");
  b.Sample({main, big}, {1000000});
  b.Sample({main, tiny, deeper}, {1});
  FlameOptions options;
  options.min_width = 0.1;  // tiny is 0.0012 px wide
  std::vector<FlameBox> boxes = FlameBoxes(Svg(b.profile(), options));
  EXPECT_EQ(Find(boxes, "tiny", 2), nullptr);
  EXPECT_EQ(Find(boxes, "deeper", 3), nullptr);
  ASSERT_NE(Find(boxes, "main", 1), nullptr);
  EXPECT_EQ(Find(boxes, "main", 1)->title, "main (1,000,001 samples, 100%)");
  EXPECT_EQ(boxes[0].title, "all (1,000,001 samples, 100%)");

  options.min_width = 0;
  boxes = FlameBoxes(Svg(b.profile(), options));
  ASSERT_NE(Find(boxes, "deeper", 3), nullptr);
  EXPECT_EQ(Find(boxes, "deeper", 3)->x, 1000000u);
}

TEST(FlameSvg, NamesAreEscapedAndCleaned) {
  ProfileBuilder b;
  const uint32_t op = b.Frame("operator<<(std::ostream&, \"x\" > y)");
  const uint32_t bad = b.Frame(std::string("bad\x01name\xff\xfe") + "\xe2\x82\xac");
  const uint32_t empty = b.Frame("");
  b.Sample({op, bad, empty}, {3});
  const std::string svg = Svg(b.profile());
  EXPECT_NE(svg.find("operator&lt;&lt;(std::ostream&amp;, &quot;x&quot; &gt; y)"),
            std::string::npos);
  const std::vector<FlameBox> boxes = FlameBoxes(svg);
  ASSERT_EQ(boxes.size(), 4u);
  EXPECT_EQ(boxes[1].name, "operator<<(std::ostream&, \"x\" > y)");
  EXPECT_EQ(boxes[1].label, boxes[1].name);  // wide enough for the whole name
  // Control characters become spaces, broken UTF-8 the replacement character; valid
  // multi-byte characters stay.
  EXPECT_EQ(boxes[2].name, "bad name\xef\xbf\xbd\xef\xbf\xbd\xe2\x82\xac");
  EXPECT_EQ(boxes[3].name, "[unknown]");
}

TEST(FlameSvg, LabelsAreCutToFit) {
  ProfileBuilder b;
  const std::string long_name(300, 'x');
  const uint32_t root = b.Frame(long_name);
  b.Sample({root, b.Frame("short")}, {1});
  b.Sample({root}, {99});
  FlameOptions options;
  options.min_width = 0;
  const std::vector<FlameBox> boxes = FlameBoxes(Svg(b.profile(), options));
  const FlameBox* wide = Find(boxes, long_name, 1);
  const FlameBox* narrow = Find(boxes, "short", 2);
  ASSERT_TRUE(wide && narrow);
  // 1180 px at 7.08 px per character: 166 characters fit, the last two are "..".
  EXPECT_EQ(wide->label, std::string(164, 'x') + "..");
  EXPECT_EQ(narrow->label, "");  // 11.8 px: not even three characters
}

TEST(FlameSvg, ColoursAreStablePerNameAndShowTheKind) {
  ProfileBuilder b;
  const uint32_t main = b.Frame("main"), parse = b.Frame("parse");
  const uint32_t inl = b.Inlined("parse");
  const uint32_t trunc = b.Synthetic("[truncated]");
  b.Sample({main, parse}, {5});
  b.Sample({main, inl}, {5});
  b.Sample({trunc, parse}, {5});
  const std::vector<FlameBox> boxes = FlameBoxes(Svg(b.profile()));
  const FlameBox* native = nullptr;
  const FlameBox* inlined = nullptr;
  const FlameBox* under_trunc = nullptr;
  for (const FlameBox& box : boxes) {
    if (box.name == "parse" && box.title.find("inlined") != std::string::npos) inlined = &box;
    if (box.name == "parse" && box.title.find("inlined") == std::string::npos) {
      (box.x == 0 ? under_trunc : native) = &box;
    }
  }
  const FlameBox* truncated = Find(boxes, "[truncated]", 1);
  ASSERT_TRUE(native && inlined && under_trunc && truncated);
  EXPECT_EQ(native->fill, under_trunc->fill);  // same name, same colour, anywhere
  EXPECT_NE(native->fill, inlined->fill);
  EXPECT_EQ(inlined->title, "parse (inlined, 5 samples, 33.33%)");

  int r = 0, g = 0, bl = 0;
  ASSERT_EQ(std::sscanf(native->fill.c_str(), "rgb(%d,%d,%d)", &r, &g, &bl), 3);
  EXPECT_GE(r, 205);  // warm: red dominates
  EXPECT_LE(bl, 55);
  ASSERT_EQ(std::sscanf(inlined->fill.c_str(), "rgb(%d,%d,%d)", &r, &g, &bl), 3);
  EXPECT_LT(r, g);  // aqua
  EXPECT_EQ(g, bl);
  ASSERT_EQ(std::sscanf(truncated->fill.c_str(), "rgb(%d,%d,%d)", &r, &g, &bl), 3);
  EXPECT_TRUE(r == g && g == bl);  // grey

  // The same function keeps its colour in another graph.
  ProfileBuilder other;
  other.Sample({other.Frame("zzz"), other.Frame("parse")}, {1});
  const std::vector<FlameBox> other_boxes = FlameBoxes(Svg(other.profile()));
  const FlameBox* elsewhere = Find(other_boxes, "parse", 2);
  ASSERT_NE(elsewhere, nullptr);
  EXPECT_EQ(elsewhere->fill, native->fill);
}

TEST(FlameSvg, InvertedPutsTheRootOnTop) {
  FlameOptions options;
  options.inverted = true;
  const std::string svg = Svg(GoldenProfile(), options);
  const std::vector<FlameBox> boxes = FlameBoxes(svg);
  ASSERT_GT(boxes.size(), 3u);
  for (const FlameBox& box : boxes) {
    EXPECT_DOUBLE_EQ(box.rect_y, 60 + 16.0 * box.depth) << box.title;
  }
  EXPECT_NE(svg.find(">Icicle Graph</text>"), std::string::npos);
}

TEST(FlameSvg, EmptyProfileSaysSo) {
  ProfileBuilder b;
  const std::string svg = Svg(b.profile());
  EXPECT_TRUE(FlameBoxes(svg).empty());
  EXPECT_NE(svg.find(">No samples</text>"), std::string::npos);
}

TEST(FlameSvg, BadOptionsAreRefused) {
  std::string svg = "untouched";
  FlameOptions options;
  options.event = 2;
  Status s = WriteFlameSvg(GoldenProfile(), options, &svg);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("event #2 does not exist"), std::string::npos) << s.message();
  EXPECT_EQ(svg, "untouched");
  options = {};
  options.width = 99;
  EXPECT_FALSE(WriteFlameSvg(GoldenProfile(), options, &svg).ok());
  options = {};
  options.min_width = -1;
  EXPECT_FALSE(WriteFlameSvg(GoldenProfile(), options, &svg).ok());
}

// The stream overload writes in chunks: a graph of many of them must be the same bytes,
// including the boxes of samples with a frame index past the table or no frame at all.
TEST(FlameSvg, StreamedIsTheSameDocument) {
  ProfileBuilder b;
  std::vector<uint32_t> frames;
  for (int i = 0; i < 200; ++i) frames.push_back(b.Frame("function_" + std::to_string(i)));
  for (int i = 0; i < 5000; ++i) {
    b.Sample({frames[i % 7], frames[i % 13], frames[i % 200], frames[(i * 31) % 200]},
             {1 + i % 5});
  }
  b.Sample({frames[3], 999}, {7});
  b.Sample({}, {3});
  FlameOptions options;
  options.min_width = 0;
  const std::string whole = Svg(b.profile(), options);
  ASSERT_GT(whole.size(), size_t{1} << 20);
  std::ostringstream streamed;
  ASSERT_TRUE(WriteFlameSvg(b.profile(), options, streamed).ok());
  EXPECT_EQ(streamed.str(), whole);
  std::vector<FlameBox> boxes = FlameBoxes(whole);
  ASSERT_NE(Find(boxes, "[unknown]", 1), nullptr);
  ASSERT_NE(Find(boxes, "[unknown]", 2), nullptr);
  EXPECT_EQ(Find(boxes, "[unknown]", 1)->title, "[unknown] (3 samples, 0.02%)");
}

TEST(FlameSvg, BadOptionsWriteNothingToTheStream) {
  FlameOptions options;
  options.event = 2;
  std::ostringstream out;
  EXPECT_FALSE(WriteFlameSvg(GoldenProfile(), options, out).ok());
  options = {};
  options.width = 99;
  EXPECT_FALSE(WriteFlameSvg(GoldenProfile(), options, out).ok());
  EXPECT_EQ(out.str(), "");
}

TEST(FlameSvgDiff, HotterIsRedColderIsBlueUnchangedIsWhite) {
  Profile before, after;
  DiffProfiles(&before, &after);
  std::string svg;
  ASSERT_TRUE(WriteDiffFlameSvg(before, after, {}, &svg).ok());
  EXPECT_EQ(XmlWellFormedError(svg), "");
  const std::vector<FlameBox> boxes = FlameBoxes(svg);
  const FlameBox* parse = Find(boxes, "parse", 2);
  const FlameBox* compress = Find(boxes, "compress", 2);
  const FlameBox* io = Find(boxes, "io", 2);
  ASSERT_TRUE(parse && compress && io);
  // Widths are `after`'s. Before scaled x2: parse 20 -> 50 (+30), compress 60 -> 30 (-30).
  EXPECT_EQ(parse->w, 50u);
  EXPECT_EQ(parse->fill, "rgb(255,0,0)");
  EXPECT_EQ(compress->fill, "rgb(0,0,255)");
  EXPECT_EQ(io->fill, "rgb(255,255,255)");
  EXPECT_EQ(parse->title, "parse (50 samples, 50.00%; +30.00%)");
  EXPECT_EQ(compress->title, "compress (30 samples, 30.00%; -30.00%)");
  EXPECT_EQ(io->title, "io (20 samples, 20.00%; 0.00%)");
}

TEST(FlameSvgDiff, SameShapeAtAnotherRateIsAllWhite) {
  Profile before, after;
  DiffProfiles(&before, &after);
  Profile doubled = after;
  for (Sample& sample : doubled.samples) sample.weights[0] *= 2;
  std::string svg;
  ASSERT_TRUE(WriteDiffFlameSvg(doubled, after, {}, &svg).ok());
  for (const FlameBox& box : FlameBoxes(svg)) EXPECT_EQ(box.fill, "rgb(255,255,255)") << box.name;
}

TEST(FlameSvgDiff, UnchangedStaysWhiteWhateverTheScale) {
  // 14 before, 58 after: 7 * (58 / 14.0) is 29.000000000000004 in doubles, not 29.
  ProfileBuilder before, after;
  const uint32_t b_main = before.Frame("main"), b_a = before.Frame("a"), b_b = before.Frame("b");
  before.Sample({b_main, b_a}, {7});
  before.Sample({b_main, b_b}, {7});
  const uint32_t a_main = after.Frame("main"), a_a = after.Frame("a"), a_b = after.Frame("b");
  after.Sample({a_main, a_a}, {29});
  after.Sample({a_main, a_b}, {29});
  std::string svg;
  ASSERT_TRUE(WriteDiffFlameSvg(before.profile(), after.profile(), {}, &svg).ok());
  for (const FlameBox& box : FlameBoxes(svg)) {
    EXPECT_EQ(box.fill, "rgb(255,255,255)") << box.name;
    EXPECT_NE(box.title.find("; 0.00%)"), std::string::npos) << box.title;
  }
}

TEST(FlameSvgDiff, VanishedFunctionsTakeNoRoom) {
  Profile before, after;
  DiffProfiles(&before, &after);
  ProfileBuilder gone;
  gone.Sample({gone.Frame("main"), gone.Frame("legacy")}, {40});
  std::string svg;
  ASSERT_TRUE(WriteDiffFlameSvg(gone.profile(), after, {}, &svg).ok());
  const std::vector<FlameBox> boxes = FlameBoxes(svg);
  EXPECT_EQ(Find(boxes, "legacy", 2), nullptr);
  EXPECT_EQ(boxes[0].w, 100u);
  // Everything in `after` is new, so it is all hotter, but the largest change is `legacy`
  // going away (-100 after scaling), which sets the scale: parse's +50 is half-saturated.
  EXPECT_EQ(Find(boxes, "parse", 2)->fill, "rgb(255,105,105)");
  FlameOptions options;
  options.before_event = 3;
  EXPECT_FALSE(WriteDiffFlameSvg(before, after, options, &svg).ok());
}

TEST(FlameSvgFile, SvgNamesWriteFlameGraphsAtomically) {
  EXPECT_EQ(FormatFromPath("/tmp/out.svg"), Format::kFlameSvg);
  EXPECT_EQ(FormatFromPath(".svg"), std::nullopt);
  char dir_template[] = "/tmp/inprof-flame-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string path = std::string(dir_template) + "/cpu.svg";
  ExportOptions options;
  options.event = 1;
  ASSERT_TRUE(WriteProfileFile(GoldenProfile(), Format::kFlameSvg, path, options).ok());
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  FlameOptions flame;
  flame.event = 1;
  EXPECT_EQ(text.str(), Svg(GoldenProfile(), flame));
  options.event = 5;
  const std::string bad = std::string(dir_template) + "/bad.svg";
  const Status s = WriteProfileFile(GoldenProfile(), Format::kFlameSvg, bad, options);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(bad), std::string::npos) << s.message();
  EXPECT_NE(access(bad.c_str(), F_OK), 0);
  std::remove(path.c_str());
  rmdir(dir_template);
}

}  // namespace
}  // namespace inprof::test
