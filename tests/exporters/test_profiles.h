// Hand-built profiles for the exporter tests.
#ifndef INPROF_TESTS_EXPORTERS_TEST_PROFILES_H_
#define INPROF_TESTS_EXPORTERS_TEST_PROFILES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "inprof/profile.h"

namespace inprof::test {

class ProfileBuilder {
 public:
  ProfileBuilder() { AddEvent("cpu", "nanoseconds"); }

  ProfileBuilder& AddEvent(std::string name, std::string unit) {
    EventInfo event;
    event.name = std::move(name);
    event.unit = std::move(unit);
    profile_.events.push_back(std::move(event));
    return *this;
  }

  uint32_t Frame(std::string function, std::string file = {}, uint32_t line = 0,
                 FrameKind kind = FrameKind::kNative) {
    inprof::Frame frame;
    frame.function = std::move(function);
    frame.file = std::move(file);
    frame.line = line;
    frame.kind = kind;
    frame.address = 0x1000 + 0x10 * profile_.frames.size();
    profile_.frames.push_back(std::move(frame));
    return static_cast<uint32_t>(profile_.frames.size() - 1);
  }
  uint32_t Inlined(std::string function, std::string file = {}, uint32_t line = 0) {
    return Frame(std::move(function), std::move(file), line, FrameKind::kInlined);
  }
  uint32_t Synthetic(std::string name) {
    return Frame(std::move(name), {}, 0, FrameKind::kSynthetic);
  }

  // Root first. One weight per event; missing trailing weights are zero.
  ProfileBuilder& Sample(std::vector<uint32_t> frames, std::vector<int64_t> weights) {
    weights.resize(profile_.events.size(), 0);
    for (size_t i = 0; i < weights.size(); ++i) {
      int64_t& total = profile_.events[i].total_weight;
      if (__builtin_add_overflow(total, weights[i], &total)) total = INT64_MAX;
    }
    profile_.samples.push_back({std::move(frames), std::move(weights)});
    return *this;
  }

  const Profile& profile() const { return profile_; }

 private:
  Profile profile_;
};

// The profile behind the golden files: ordinary C++ stacks plus every kind of frame the
// writers must treat specially (no source, synthetic, inlined, hostile names and paths), on
// two events.
inline Profile GoldenProfile() {
  ProfileBuilder b;
  b.AddEvent("wall", "nanoseconds");
  const uint32_t start = b.Frame("__libc_start_call_main");  // libc without debug info
  const uint32_t main = b.Frame("main", "/src/app/main.cpp", 42);
  const uint32_t run = b.Frame("run(Config const&)", "/src/app/run.cpp", 17);
  const uint32_t compute = b.Frame("compute(int)", "/src/app/compute.cpp", 88);
  const uint32_t divide = b.Inlined("operator/(Ratio, Ratio)", "/src/app/ratio.h", 30);
  const uint32_t push =
      b.Inlined("std::vector<int, std::allocator<int> >::push_back(int const&)",
                "/usr/include/c++/12/bits/stl_vector.h", 1287);
  const uint32_t find = b.Frame("std::map<int, int>::find(int const&)",
                                "/usr/include/c++/12/bits/stl_map.h", 1200);
  const uint32_t gcc_lambda =
      b.Frame("main::{lambda(int)#1}::operator()(int) const", "/src/app/main.cpp", 50);
  const uint32_t clang_lambda =
      b.Frame("(lambda at /src/app/main.cpp:55:12)::operator()() const", "/src/app/main.cpp", 56);
  const uint32_t semicolon = b.Frame("parse;tokenize", "/src/app/parse.cpp", 9);
  const uint32_t newline = b.Frame("weird\nname\t ", "/src/app/odd.cpp", 5);
  const uint32_t memcpy = b.Frame("__memmove_avx_unaligned_erms");
  const uint32_t module = b.Frame("libfoo.so+0x1a2b");
  const uint32_t truncated = b.Synthetic("[truncated]");
  const uint32_t relative = b.Frame("helper()", "src/helper.cpp", 3);
  const uint32_t colon_path = b.Frame("versioned()", "/src/v1:2/x.cpp", 7);
  // Same function at another address: merges with `compute` by name, not by line.
  const uint32_t compute2 = b.Frame("compute(int)", "/src/app/compute.cpp", 91);

  b.Sample({start, main, run, compute, divide}, {40, 45});
  b.Sample({start, main, run, compute2}, {7, 9});
  b.Sample({start, main, run, compute}, {3, 3});
  b.Sample({start, main, run, push, memcpy}, {12, 12});
  b.Sample({start, main, find}, {5, 6});
  b.Sample({start, main, gcc_lambda, clang_lambda}, {8, 8});
  b.Sample({start, main, semicolon, newline}, {2, 2});
  b.Sample({start, module, memcpy}, {6, 6});  // no source anywhere
  b.Sample({truncated, run, compute}, {4, 4});
  b.Sample({start, main, relative}, {1, 1});
  b.Sample({start, main, colon_path}, {1, 1});
  b.Sample({start, main}, {0, 30});  // sleeping: wall only
  return b.profile();
}

}  // namespace inprof::test

#endif  // INPROF_TESTS_EXPORTERS_TEST_PROFILES_H_
