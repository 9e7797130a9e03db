// Folded stacks read back: "frame;frame;...;frame count" per line, as flamegraph.pl reads
// them, plus our own frame spellings ("function (file:line)" and the "_[i]" inline hint).
#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "inprof/folded.h"
#include "stacks.h"

namespace inprof {
namespace {

// "function (file:line)" -> function, file, line; anything else is a bare function name.
Frame ParseFoldedFrame(std::string_view raw) {
  // Control characters become spaces first, as the writer turns them: otherwise a name
  // such as "f\0(a.cpp:1)" would be a bare name here but "f (a.cpp:1)" once written.
  std::string cleaned;
  std::string_view text = raw;
  for (char c : raw) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      cleaned = std::string(raw);
      internal::ReplaceControlChars(cleaned);
      text = cleaned;
      break;
    }
  }
  // Surrounding spaces go too, as the writer trims them: "f_[i] " must not be native "f_[i]"
  // here and inlined "f" once written.
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  Frame frame;
  // Colour hints that flamegraph.pl and inferno understand; only "_[i]" means something here.
  // All of them go, outermost first ("f_[w]_[k]" is "f"): stripping one would leave a name
  // that ends in a hint, which the next read would strip too (found by the folded fuzzer).
  bool hinted = false;
  for (bool outermost = true, stripped = true; stripped;) {
    stripped = false;
    for (std::string_view hint : {"_[i]", "_[k]", "_[j]", "_[w]"}) {
      if (text.size() > hint.size() && text.ends_with(hint)) {
        if (outermost) frame.kind = hint == "_[i]" ? FrameKind::kInlined : FrameKind::kNative;
        outermost = false;
        hinted = true;
        text.remove_suffix(hint.size());
        while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
        stripped = true;
        break;
      }
    }
  }
  std::string_view function, file;
  if (internal::SplitFrameLocation(text, &function, &file, &frame.line)) {
    frame.function = std::string(function);
    frame.file = std::string(file);
    return frame;
  }
  frame.function = std::string(text);
  // "[unknown]", "[overflow]": ours, unless a hint said what the frame is ("[w]_[i]" is an
  // inlined function named "[w]": found by the folded fuzzer, it read back as synthetic and
  // lost its hint when written again).
  if (!hinted && frame.function.starts_with('[') && frame.function.ends_with(']')) {
    frame.kind = FrameKind::kSynthetic;
  }
  return frame;
}

}  // namespace

Status ReadFolded(std::string_view text, const std::string& name, Profile* out) {
  internal::ProfileAssembler assembler;
  // Frame ids by their text in `text` itself, which outlives the read: a big profile repeats
  // each frame many times, and a lookup must not copy it to a std::string first (that copy,
  // its allocation and its hash were most of the read).
  std::unordered_map<std::string_view, uint32_t> ids;
  std::string error;
  const bool ok = internal::ForEachLine(text, [&](std::string_view line, size_t number) {
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.empty()) return true;
    const size_t space = line.rfind(' ');
    int64_t count = 0;
    if (space == std::string_view::npos || space == 0 ||
        !internal::ParseCount(line.substr(space + 1), &count)) {
      // A '#' line without a count is a comment. One with a count is a stack, as
      // flamegraph.pl reads it: a root frame may begin with '#'.
      if (line.starts_with('#')) return true;
      error = name + ":" + std::to_string(number) +
              ": expected 'frame;frame;...;frame COUNT' with an integer count";
      return false;
    }
    std::string_view stack = line.substr(0, space);
    std::vector<uint32_t> frames;
    frames.reserve(static_cast<size_t>(std::count(stack.begin(), stack.end(), ';')) + 1);
    while (true) {
      const size_t semi = stack.find(';');
      const std::string_view frame = stack.substr(0, semi);
      auto [it, added] = ids.try_emplace(frame, 0);
      if (added) it->second = assembler.Intern(frame, [&] { return ParseFoldedFrame(frame); });
      frames.push_back(it->second);
      if (semi == std::string_view::npos) break;
      stack.remove_prefix(semi + 1);
    }
    assembler.AddSample(std::move(frames), count);
    return true;
  });
  if (!ok) return Status::Error(error);
  *out = assembler.Finish();
  return Status::Ok();
}

}  // namespace inprof
