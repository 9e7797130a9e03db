// Folded stacks read back: "frame;frame;...;frame count" per line, as flamegraph.pl reads
// them, plus our own frame spellings ("function (file:line)" and the "_[i]" inline hint).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
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

// Where the frame at the start of `stack` ends (at its ';', or with `stack`), and a hash of
// its text in `*hash`: both in one pass, 8 bytes a step. A memchr call per frame (most
// frames are a few dozen bytes) and a second pass to hash were much of the read.
size_t FrameEnd(std::string_view stack, uint64_t* hash) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kSemicolons = kOnes * ';';
  constexpr uint64_t kMultiplier = 0x9e3779b97f4a7c15ULL;
  uint64_t h = 0;
  const auto mix = [&h](uint64_t word) { h = (std::rotl(h, 23) ^ word) * kMultiplier; };
  // Words hold the text's bytes first byte lowest, zero-padded; the length goes last.
  const auto finish = [&](size_t size) {
    mix(size);
    // The slot comes from the top bits, which the multiplications mixed best.
    *hash = h ^ (h >> 31);
    return size;
  };
  size_t i = 0;
  for (; i + 8 <= stack.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, stack.data() + i, 8);
    if constexpr (std::endian::native == std::endian::big) word = __builtin_bswap64(word);
    const uint64_t x = word ^ kSemicolons;
    // The top bit of each byte of x that is zero: exact up to the first one, which is all
    // that is read.
    const uint64_t zeros = (x - kOnes) & ~x & (kOnes << 7);
    if (zeros != 0) {
      const int before = std::countr_zero(zeros) / 8;
      if (before > 0) mix(word & (~uint64_t{0} >> (64 - 8 * before)));
      return finish(i + static_cast<size_t>(before));
    }
    mix(word);
  }
  uint64_t word = 0;
  size_t n = 0;
  for (; i + n < stack.size() && stack[i + n] != ';'; ++n) {
    word |= uint64_t{static_cast<unsigned char>(stack[i + n])} << (8 * n);
  }
  if (n > 0) mix(word);
  return finish(i + n);
}

// Frame ids by their text: a big profile repeats each of a few thousand frames millions of
// times. Open addressing on FrameEnd()'s hash, and the known texts copied back to back:
// std::unordered_map's byte-wise hash, its node per entry and the compare against the
// frame's first occurrence, somewhere else in a file of many megabytes (a cache and TLB
// miss per lookup), were most of the read.
class FrameIds {
 public:
  // The id of `text`, whose hash is `hash`; `make()` gives it on first sight.
  template <typename Make>
  uint32_t Find(std::string_view text, uint64_t hash, Make make) {
    size_t i = static_cast<size_t>(hash >> shift_);
    while (slots_[i].id != kEmpty) {
      const Slot& slot = slots_[i];
      if (slot.hash == hash && slot.size == text.size() &&
          SameBytes(texts_.data() + slot.offset, text.data(), text.size())) {
        return slot.id;
      }
      i = (i + 1) & (slots_.size() - 1);
    }
    const uint32_t id = make();
    slots_[i] = {hash, texts_.size(), text.size(), id};
    texts_.append(text);
    // At most half full, so that a miss ends soon.
    if (++used_ * 2 > slots_.size()) Grow();
    return id;
  }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    uint64_t hash = 0;
    size_t offset = 0;  // into texts_
    size_t size = 0;
    uint32_t id = kEmpty;
  };

  // memcmp(a, b, size) == 0 inline, 8 bytes a step: a call to memcmp for each of millions
  // of lookups of a few dozen bytes cost more than the compare.
  static bool SameBytes(const char* a, const char* b, size_t size) {
    if (size < 8) {
      for (size_t i = 0; i < size; ++i) {
        if (a[i] != b[i]) return false;
      }
      return true;
    }
    uint64_t x, y;
    for (size_t i = 0; i + 8 < size; i += 8) {
      std::memcpy(&x, a + i, 8);
      std::memcpy(&y, b + i, 8);
      if (x != y) return false;
    }
    // The last 8 bytes, overlapping what came before.
    std::memcpy(&x, a + size - 8, 8);
    std::memcpy(&y, b + size - 8, 8);
    return x == y;
  }

  void Grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    --shift_;
    for (const Slot& slot : old) {
      if (slot.id == kEmpty) continue;
      size_t i = static_cast<size_t>(slot.hash >> shift_);
      while (slots_[i].id != kEmpty) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = slot;
    }
  }

  std::string texts_;
  std::vector<Slot> slots_ = std::vector<Slot>(size_t{1} << 10);
  int shift_ = 64 - 10;
  size_t used_ = 0;
};

// Lines read before the samples are reserved for the whole file.
constexpr size_t kSizingLines = 1024;

}  // namespace

Status ReadFolded(std::string_view text, const std::string& name, Profile* out) {
  internal::ProfileAssembler assembler;
  FrameIds ids;
  // One line's frames, reused: each sample then gets a vector of its exact size with one
  // allocation, without counting the ';' of the line first.
  std::vector<uint32_t> frames;
  std::string error;
  const bool ok = internal::ForEachLine(text, [&](std::string_view line, size_t number) {
    if (number == kSizingLines) {
      // The first lines' length, scaled to the whole file, gives the count (an eighth more,
      // for the lines that run longer). Capped so that the room reserved is no larger than
      // the file: a file whose first lines are short must not reserve gigabytes.
      const size_t read = static_cast<size_t>(line.data() - text.data());
      const size_t guess = read > 0 ? text.size() * kSizingLines / read * 9 / 8 : 0;
      assembler.ReserveSamples(std::min(guess, text.size() / sizeof(Sample)));
    }
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
    frames.clear();
    while (true) {
      uint64_t hash = 0;
      const size_t end = FrameEnd(stack, &hash);
      const std::string_view frame = stack.substr(0, end);
      frames.push_back(ids.Find(frame, hash, [&] {
        return assembler.Intern(frame, [&] { return ParseFoldedFrame(frame); });
      }));
      if (end == stack.size()) break;
      stack.remove_prefix(end + 1);
    }
    assembler.AddSample(std::vector<uint32_t>(frames.begin(), frames.end()), count);
    return true;
  });
  if (!ok) return Status::Error(error);
  *out = assembler.Finish();
  return Status::Ok();
}

}  // namespace inprof
