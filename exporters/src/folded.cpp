// Folded stacks ("frame;frame;...;frame count"), the input of flamegraph.pl, inferno,
// speedscope and Pyroscope's `format=folded`.
//
// What the readers require (docs/formats.md, "Folded stacks"): flamegraph.pl splits with
// /^(.*)\s+?(\d+(?:\.\d*)?)$/, inferno takes the count after the last space; both split the
// stack on ';'. Frames therefore never contain ';' or a newline, and the count is an integer
// after exactly one space.
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "inprof/exporters.h"
#include "internal/folded.h"
#include "internal/stacks.h"

namespace inprof {
namespace internal {
namespace {

constexpr std::string_view kUnknownFrame = "[unknown]";

bool IsNumberLike(std::string_view word) {
  // inferno's rfind_samples(): ASCII digits with at most one '.'.
  size_t dots = 0;
  for (char c : word) {
    if (c == '.') {
      ++dots;
    } else if (!std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return dots <= 1;
}

// inferno reads differential profiles ("stack before after"): once it has taken the count it
// trims the line and, if the word after the last space looks like a number, takes that as a
// second count. A leaf frame such as "worker 2" (a thread or script name) would lose its tail
// that way, so a frame whose last word is number-like gets '_' instead of that space. Applied
// to every frame, not only leaves, so one function has one name throughout the graph.
void GuardNumericTail(std::string& text) {
  const size_t space = text.rfind(' ');
  if (space != std::string::npos && IsNumberLike(std::string_view(text).substr(space + 1))) {
    text[space] = '_';
  }
}

// ';' would split the frame, a newline the line; neither may survive.
std::string CleanText(std::string_view raw) {
  std::string text(raw);
  for (char& c : text) {
    if (c == ';') c = ':';
  }
  ReplaceControlChars(text);
  TrimSpaces(text);
  return text;
}

}  // namespace

std::string FoldedFrameText(const Frame& frame, bool with_lines) {
  std::string text = CleanText(frame.function);
  if (text.empty()) text = kUnknownFrame;
  if (with_lines && frame.has_source()) {
    std::string file = CleanText(frame.file);
    // Readers split "function (file:line)" at the last " (": a file name holding one of its
    // own (a directory "x (copy)") would move the split, so its " (" becomes " _(".
    for (size_t at = file.find(" ("); at != std::string::npos; at = file.find(" (", at + 2)) {
      file.replace(at, 2, " _(");
    }
    text += " (";
    text += file;
    text += ':';
    text += std::to_string(frame.line);
    text += ')';
  }
  // A name that itself ends like a colour hint ("f_[j]", as a perf script symbol may) would
  // lose it to every reader: its '_' becomes a space, which no reader strips ("f [j]"); a name
  // that is nothing but a hint loses the '_' ("[j]"), as a leading space would be trimmed.
  if (text.size() >= 4 && text[text.size() - 4] == '_' && text[text.size() - 3] == '[' &&
      text.back() == ']' &&
      std::string_view("ikjw").find(text[text.size() - 2]) != std::string_view::npos) {
    if (text.size() == 4) {
      text.erase(0, 1);
    } else {
      text[text.size() - 4] = ' ';
    }
  }
  // The colour hint goes last: flamegraph.pl and inferno only recognise it as a suffix.
  // Default (names-only) output leaves it off so an inlined function and the same function
  // called normally merge into one box, as they do in perf-based graphs.
  if (with_lines && frame.kind == FrameKind::kInlined) text += "_[i]";
  GuardNumericTail(text);
  return text;
}

}  // namespace internal

void WriteFolded(const Profile& profile, const ExportOptions& options, std::ostream& out) {
  // Render each frame once; samples share frames heavily.
  std::vector<std::string> rendered;
  rendered.reserve(profile.frames.size());
  for (const Frame& frame : profile.frames) {
    rendered.push_back(internal::FoldedFrameText(frame, options.folded_lines));
  }

  internal::StackMerger merger;
  std::string stack;
  for (const Sample& sample : profile.samples) {
    const uint64_t weight = internal::SampleWeight(sample, options.event);
    if (weight == 0) continue;
    stack.clear();
    for (uint32_t index : sample.frames) {
      if (!stack.empty()) stack += ';';
      stack += index < rendered.size() ? rendered[index] : std::string(internal::kUnknownFrame);
    }
    // A sample with no frames at all still cost time; keep its weight visible.
    if (stack.empty()) stack = internal::kUnknownFrame;
    merger.Add(stack, weight);
  }
  merger.WriteSorted(out);
}

}  // namespace inprof
