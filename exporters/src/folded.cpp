// Folded stacks ("frame;frame;...;frame count"), the input of flamegraph.pl, inferno,
// speedscope and Pyroscope's `format=folded`.
//
// What the readers require (docs/formats.md, "Folded stacks"): flamegraph.pl splits with
// /^(.*)\s+?(\d+(?:\.\d*)?)$/, inferno takes the count after the last space; both split the
// stack on ';'. Frames therefore never contain ';' or a newline, and the count is an integer
// after exactly one space.
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "folded_text.h"
#include "inprof/folded.h"
#include "stacks.h"

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

namespace {

// The text of an extra root frame (ExportOptions::folded_root), escaped like every frame. In
// `function (file:line)` output a root ending in "(x:1)" would read back as a location, so its
// " (" becomes " _(" there, as in file names.
std::string RootText(std::string_view raw, bool with_lines) {
  Frame frame;
  frame.function = std::string(raw);
  std::string text = FoldedFrameText(frame, false);
  if (with_lines) {
    for (size_t at = text.find(" ("); at != std::string::npos; at = text.find(" (", at + 2)) {
      text.replace(at, 2, " _(");
    }
  }
  return text;
}

// Root frames per sample: by thread (its name, else its tid; "[no thread]" when the sample
// did not record one) or by the value of one label ("[no KEY]" when the sample lacks it).
// Each distinct root is rendered once.
class RootFrames {
 public:
  RootFrames(const Profile& profile, const ExportOptions& options)
      : with_lines_(options.folded_lines) {
    if (options.folded_root == "thread") {
      by_thread_ = true;
      for (const ThreadHealth& t : profile.health.threads) {
        if (!t.name.empty()) names_[t.tid] = t.name;
      }
      for (const ThreadInfo& t : profile.threads) {
        if (!t.name.empty()) names_[t.tid] = t.name;
      }
    } else if (options.folded_root.starts_with("label:") && options.folded_root.size() > 6) {
      key_ = options.folded_root.substr(6);
      by_label_ = true;
      missing_ = RootText("[no " + key_ + "]", with_lines_);
      for (const std::vector<Label>& set : profile.label_sets) {
        const Label* found = nullptr;
        for (const Label& label : set) {
          if (label.key == key_) found = &label;
        }
        per_set_.push_back(found ? RootText(found->value, with_lines_) : missing_);
      }
    }
  }

  bool enabled() const { return by_thread_ || by_label_; }

  const std::string& For(const Sample& sample) {
    if (by_label_) {
      return sample.labels != 0 && sample.labels <= per_set_.size() ? per_set_[sample.labels - 1]
                                                                    : missing_;
    }
    auto [it, added] = thread_roots_.emplace(sample.tid, std::string());
    if (added) {
      auto name = names_.find(sample.tid);
      it->second = RootText(name != names_.end() ? name->second
                            : sample.tid != 0    ? std::to_string(sample.tid)
                                                 : std::string("[no thread]"),
                            with_lines_);
    }
    return it->second;
  }

 private:
  const bool with_lines_;
  bool by_thread_ = false, by_label_ = false;
  std::string key_, missing_;
  std::vector<std::string> per_set_;                // label: root per label set
  std::unordered_map<int64_t, std::string> names_;  // thread: names by tid
  std::unordered_map<int64_t, std::string> thread_roots_;
};

}  // namespace
}  // namespace internal

void WriteFolded(const Profile& profile, const ExportOptions& options, std::ostream& out) {
  // Render each frame once; samples share frames heavily.
  std::vector<std::string> rendered;
  rendered.reserve(profile.frames.size());
  for (const Frame& frame : profile.frames) {
    rendered.push_back(internal::FoldedFrameText(frame, options.folded_lines));
  }

  internal::RootFrames roots(profile, options);
  internal::StackMerger merger;
  std::string stack;
  for (const Sample& sample : profile.samples) {
    const uint64_t weight = internal::SampleWeight(sample, options.event);
    if (weight == 0) continue;
    stack.clear();
    if (roots.enabled()) {
      stack = roots.For(sample);
      stack += ';';
    }
    const size_t root_end = stack.size();
    for (uint32_t index : sample.frames) {
      if (stack.size() > root_end) stack += ';';
      stack += index < rendered.size() ? rendered[index] : std::string(internal::kUnknownFrame);
    }
    // A sample with no frames at all still cost time; keep its weight visible.
    if (stack.size() == root_end) stack += internal::kUnknownFrame;
    merger.Add(stack, weight);
  }
  merger.WriteSorted(out);
}

}  // namespace inprof
