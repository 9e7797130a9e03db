// A profile summarised per source line, per function and per caller -> callee line pair.
//
// Inclusive weights count a sample once per line (and once per function, once per edge) even
// when recursion puts the line on the stack several times, as perfanno does; otherwise a
// recursive function's lines could exceed 100 %. Self weight goes to the innermost frame
// only: a sample whose leaf has no source (libc without debug info) adds self weight to that
// function but to no line.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "inprof/annotations.h"
#include "inprof/saturating.h"

namespace inprof {
namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

void AddWeights(std::vector<int64_t>& total, const std::vector<int64_t>& weights) {
  for (size_t i = 0; i < total.size() && i < weights.size(); ++i)
    AddSaturating(total[i], weights[i]);
}

struct LineAcc {
  uint32_t file = 0;
  uint32_t line = 0;
  bool inlined = false;
  std::vector<int64_t> self, inclusive;
  std::map<uint32_t, int64_t> owners;  // function id -> inclusive weight over all events
  size_t stamp = 0;                    // last sample (1-based) that counted this line
};

struct FunctionAcc {
  uint32_t file = kNone;  // kNone: no source
  std::string name;
  uint32_t first_line = 0, last_line = 0;
  bool inlined = false;
  std::vector<int64_t> self, inclusive;
  size_t stamp = 0;
};

struct FrameInfo {
  uint32_t line = kNone;      // index into the line accumulators
  uint32_t function = kNone;  // index into the function accumulators
  bool inlined = false;
};

int64_t Sum(const std::vector<int64_t>& weights) {
  int64_t total = 0;
  for (int64_t w : weights) AddSaturating(total, w);
  return total;
}

// Builds the annotations in passes over the profile: resolve every frame of the table once
// to its line and function accumulators, add every sample's weights (inclusive counted once
// per stack), then emit files, lines, functions and edges in their documented orders.
// One builder per call; not thread-safe.
class AnnotationBuilder {
 public:
  explicit AnnotationBuilder(const Profile& profile)
      : profile_(profile), events_(profile.events.size()) {}

  Annotations Build() {
    Annotations out;
    out.meta = profile_.meta;
    out.events = profile_.events;
    out.health = profile_.health;
    ResolveFrames();
    AddSamples();
    EmitFiles(out);
    EmitLines(out);
    EmitFunctions(out);
    EmitEdges(out);
    EmitLabels(out);
    AssignHeat(out, HeatMethod::kShare);
    return out;
  }

 private:
  void ResolveFrames() {
    const Profile& profile = profile_;
    const size_t events = events_;
    std::vector<FrameInfo>& info = info_;
    info.resize(profile.frames.size());
    for (size_t i = 0; i < profile.frames.size(); ++i) {
      const Frame& frame = profile.frames[i];
      FrameInfo& fi = info[i];
      fi.inlined = frame.kind == FrameKind::kInlined;
      uint32_t file = kNone;
      if (frame.has_source()) {
        auto [it, added] = file_ids_.emplace(frame.file, static_cast<uint32_t>(files_.size()));
        if (added) files_.push_back(frame.file);
        file = it->second;
        const uint64_t key = (static_cast<uint64_t>(file) << 32) | frame.line;
        auto [lit, ladded] = line_ids_.emplace(key, static_cast<uint32_t>(lines_.size()));
        if (ladded) {
          LineAcc acc;
          acc.file = file;
          acc.line = frame.line;
          acc.self.assign(events, 0);
          acc.inclusive.assign(events, 0);
          lines_.push_back(std::move(acc));
        }
        fi.line = lit->second;
        lines_[fi.line].inlined |= fi.inlined;
      }
      const std::string name = frame.function.empty() ? std::string("[unknown]") : frame.function;
      auto [fit, fadded] = function_ids_.emplace(std::make_pair(file, name),
                                                 static_cast<uint32_t>(functions_.size()));
      if (fadded) {
        FunctionAcc acc;
        acc.file = file;
        acc.name = name;
        acc.self.assign(events, 0);
        acc.inclusive.assign(events, 0);
        functions_.push_back(std::move(acc));
      }
      fi.function = fit->second;
      FunctionAcc& fn = functions_[fi.function];
      fn.inlined |= fi.inlined;
      if (file != kNone) {
        fn.first_line = fn.first_line == 0 ? frame.line : std::min(fn.first_line, frame.line);
        fn.last_line = std::max(fn.last_line, frame.line);
      }
    }
  }

  void AddSamples() {
    const Profile& profile = profile_;
    const size_t events = events_;
    const std::vector<FrameInfo>& info = info_;
    size_t sample_number = 0;
    for (const Sample& sample : profile.samples) {
      ++sample_number;
      bool any = false;
      for (int64_t w : sample.weights) any |= w != 0;
      if (!any) continue;
      const int64_t total = Sum(sample.weights);
      uint32_t previous_line = kNone;
      for (size_t k = 0; k < sample.frames.size(); ++k) {
        const uint32_t index = sample.frames[k];
        if (index >= info.size()) continue;
        const FrameInfo& fi = info[index];
        const bool leaf = k + 1 == sample.frames.size();
        FunctionAcc& fn = functions_[fi.function];
        if (fn.stamp != sample_number) {
          fn.stamp = sample_number;
          AddWeights(fn.inclusive, sample.weights);
        }
        if (leaf) AddWeights(fn.self, sample.weights);
        if (fi.line == kNone) continue;
        LineAcc& line = lines_[fi.line];
        if (line.stamp != sample_number) {
          line.stamp = sample_number;
          AddWeights(line.inclusive, sample.weights);
          AddSaturating(line.owners[fi.function], total);
        }
        if (leaf) AddWeights(line.self, sample.weights);
        if (previous_line != kNone && previous_line != fi.line) {
          auto& [weight, stamp] = edges_[{previous_line, fi.line, fi.inlined}];
          if (weight.empty()) weight.assign(events, 0);
          if (stamp != sample_number) {
            stamp = sample_number;
            AddWeights(weight, sample.weights);
          }
        }
        previous_line = fi.line;
      }
    }
  }

  // Files by path; remembers where each file id went.
  void EmitFiles(Annotations& out) {
    std::vector<uint32_t> file_order(files_.size());
    for (uint32_t i = 0; i < files_.size(); ++i) file_order[i] = i;
    std::sort(file_order.begin(), file_order.end(),
              [&](uint32_t a, uint32_t b) { return files_[a] < files_[b]; });
    file_index_.assign(files_.size(), 0);
    out.files.resize(files_.size());
    for (uint32_t i = 0; i < file_order.size(); ++i) {
      file_index_[file_order[i]] = i;
      out.files[i].path = files_[file_order[i]];
    }
  }

  void EmitLines(Annotations& out) {
    for (const LineAcc& acc : lines_) {
      if (std::all_of(acc.inclusive.begin(), acc.inclusive.end(),
                      [](int64_t w) { return w == 0; })) {
        continue;  // only in samples without weight
      }
      LineStats line;
      line.line = acc.line;
      line.inlined = acc.inlined;
      line.self = acc.self;
      line.inclusive = acc.inclusive;
      const std::string* owner = nullptr;
      int64_t best = 0;
      for (const auto& [id, weight] : acc.owners) {
        const std::string& name = functions_[id].name;
        if (!owner || weight > best || (weight == best && name < *owner)) {
          owner = &name;
          best = weight;
        }
      }
      if (owner) line.function = *owner;
      out.files[file_index_[acc.file]].lines.push_back(std::move(line));
    }
  }

  void EmitFunctions(Annotations& out) {
    for (FunctionAcc& acc : functions_) {
      if (std::all_of(acc.inclusive.begin(), acc.inclusive.end(),
                      [](int64_t w) { return w == 0; })) {
        continue;
      }
      FunctionStats fn;
      fn.name = std::move(acc.name);
      fn.first_line = acc.first_line;
      fn.last_line = acc.last_line;
      fn.inlined = acc.inlined;
      fn.self = std::move(acc.self);
      fn.inclusive = std::move(acc.inclusive);
      if (acc.file == kNone) {
        out.functions_without_source.push_back(std::move(fn));
      } else {
        fn.file = files_[acc.file];
        out.files[file_index_[acc.file]].functions.push_back(std::move(fn));
      }
    }
    for (FileStats& file : out.files) {
      std::sort(file.lines.begin(), file.lines.end(),
                [](const LineStats& a, const LineStats& b) { return a.line < b.line; });
      std::sort(file.functions.begin(), file.functions.end(),
                [](const FunctionStats& a, const FunctionStats& b) {
                  return std::tie(a.first_line, a.last_line, a.name) <
                         std::tie(b.first_line, b.last_line, b.name);
                });
    }
    // A file whose lines_ were all weightless has nothing to show; keep indices dense anyway
    // (edges_ refer to files_ by index), so empty files_ stay in the list.
    std::sort(out.functions_without_source.begin(), out.functions_without_source.end(),
              [](const FunctionStats& a, const FunctionStats& b) { return a.name < b.name; });
  }

  void EmitEdges(Annotations& out) {
    for (auto& [key, value] : edges_) {
      const auto& [caller, callee, inlined] = key;
      CallEdge edge;
      edge.caller = {file_index_[lines_[caller].file], lines_[caller].line};
      edge.callee = {file_index_[lines_[callee].file], lines_[callee].line};
      edge.inlined = inlined;
      edge.weight = std::move(value.first);
      out.edges.push_back(std::move(edge));
    }
    std::sort(out.edges.begin(), out.edges.end(), [](const CallEdge& a, const CallEdge& b) {
      return std::tie(a.caller, a.callee, a.inlined) < std::tie(b.caller, b.callee, b.inlined);
    });
  }

  // The weight of each label: summed per label set first (samples share few sets), then
  // spread over the labels of each set. Labels whose weight is zero for every event are left
  // out, as lines are.
  void EmitLabels(Annotations& out) {
    if (profile_.label_sets.empty()) return;
    std::vector<std::vector<int64_t>> per_set(profile_.label_sets.size());
    for (const Sample& sample : profile_.samples) {
      if (sample.labels == 0 || sample.labels > per_set.size()) continue;
      std::vector<int64_t>& total = per_set[sample.labels - 1];
      if (total.empty()) total.assign(events_, 0);
      AddWeights(total, sample.weights);
    }
    std::map<std::pair<std::string, std::string>, std::vector<int64_t>> labels;
    for (size_t set = 0; set < per_set.size(); ++set) {
      if (per_set[set].empty()) continue;
      for (const Label& label : profile_.label_sets[set]) {
        std::vector<int64_t>& total = labels[{label.key, label.value}];
        if (total.empty()) total.assign(events_, 0);
        AddWeights(total, per_set[set]);
      }
    }
    for (auto& [label, weight] : labels) {
      if (std::all_of(weight.begin(), weight.end(), [](int64_t w) { return w == 0; })) continue;
      out.labels.push_back({label.first, label.second, std::move(weight)});
    }
  }

  const Profile& profile_;
  const size_t events_;
  std::unordered_map<std::string, uint32_t> file_ids_;
  std::vector<std::string> files_;
  std::vector<uint32_t> file_index_;  // file id -> index in Annotations::files_
  std::unordered_map<uint64_t, uint32_t> line_ids_;
  std::vector<LineAcc> lines_;
  std::map<std::pair<uint32_t, std::string>, uint32_t> function_ids_;
  std::vector<FunctionAcc> functions_;
  std::vector<FrameInfo> info_;
  // (caller line, callee line, inlined) -> weight, plus the stamp of the last sample.
  std::map<std::tuple<uint32_t, uint32_t, bool>, std::pair<std::vector<int64_t>, size_t>> edges_;
};

}  // namespace

Annotations BuildAnnotations(const Profile& profile) { return AnnotationBuilder(profile).Build(); }

namespace {

int64_t At(const std::vector<int64_t>& v, size_t i) { return i < v.size() ? v[i] : 0; }

}  // namespace

std::vector<std::pair<uint32_t, uint32_t>> HottestLines(const Annotations& annotations,
                                                        size_t event, bool by_inclusive,
                                                        size_t limit) {
  std::vector<std::pair<uint32_t, uint32_t>> result;
  for (uint32_t f = 0; f < annotations.files.size(); ++f) {
    const auto& lines = annotations.files[f].lines;
    for (uint32_t l = 0; l < lines.size(); ++l) {
      const LineStats& line = lines[l];
      if ((by_inclusive ? At(line.inclusive, event) : At(line.self, event)) > 0) {
        result.emplace_back(f, l);
      }
    }
  }
  auto before = [&](const std::pair<uint32_t, uint32_t>& a,
                    const std::pair<uint32_t, uint32_t>& b) {
    const LineStats& x = annotations.files[a.first].lines[a.second];
    const LineStats& y = annotations.files[b.first].lines[b.second];
    const int64_t x1 = At(by_inclusive ? x.inclusive : x.self, event);
    const int64_t y1 = At(by_inclusive ? y.inclusive : y.self, event);
    if (x1 != y1) return x1 > y1;
    const int64_t x2 = At(by_inclusive ? x.self : x.inclusive, event);
    const int64_t y2 = At(by_inclusive ? y.self : y.inclusive, event);
    if (x2 != y2) return x2 > y2;
    return std::tie(a.first, x.line) < std::tie(b.first, y.line);
  };
  const size_t n = std::min(limit, result.size());
  std::partial_sort(result.begin(), result.begin() + static_cast<ptrdiff_t>(n), result.end(),
                    before);
  result.resize(n);
  return result;
}

std::vector<const FunctionStats*> HottestFunctions(const Annotations& annotations, size_t event,
                                                   bool by_inclusive, size_t limit) {
  std::vector<const FunctionStats*> result;
  auto consider = [&](const FunctionStats& fn) {
    if ((by_inclusive ? At(fn.inclusive, event) : At(fn.self, event)) > 0) result.push_back(&fn);
  };
  for (const FileStats& file : annotations.files) {
    for (const FunctionStats& fn : file.functions) consider(fn);
  }
  for (const FunctionStats& fn : annotations.functions_without_source) consider(fn);
  auto before = [&](const FunctionStats* x, const FunctionStats* y) {
    const int64_t x1 = At(by_inclusive ? x->inclusive : x->self, event);
    const int64_t y1 = At(by_inclusive ? y->inclusive : y->self, event);
    if (x1 != y1) return x1 > y1;
    const int64_t x2 = At(by_inclusive ? x->self : x->inclusive, event);
    const int64_t y2 = At(by_inclusive ? y->self : y->inclusive, event);
    if (x2 != y2) return x2 > y2;
    return std::tie(x->file, x->name, x->first_line) < std::tie(y->file, y->name, y->first_line);
  };
  const size_t n = std::min(limit, result.size());
  std::partial_sort(result.begin(), result.begin() + static_cast<ptrdiff_t>(n), result.end(),
                    before);
  result.resize(n);
  return result;
}

}  // namespace inprof
