// The annotation JSON reader: one pass over the text with a pull cursor, filling the model
// directly (no document tree), so a large file costs one read and little more memory than
// the model itself. Unknown keys are skipped, so newer writers that add keys stay readable;
// a different "format" or a newer "version" is refused.
#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "inprof/annotation_json.h"
#include "inprof/json.h"

namespace inprof {
namespace {

using internal::JsonCursor;

constexpr int64_t kVersion = 1;

// Per-event arrays hold one value per event: a handful. They are collected on the stack
// and stored with one exact allocation, rather than grown element by element.
template <typename T, typename Read>
bool ReadSmallArray(JsonCursor& c, std::vector<T>* out, Read read) {
  T buffer[16];
  size_t n = 0;
  std::vector<T> spill;  // only for arrays longer than the buffer
  bool done = false;
  if (!c.BeginArray()) return false;
  while (true) {
    if (!c.NextElement(&done)) return false;
    if (done) break;
    T v{};
    if (!read(&v)) return false;
    if (n < std::size(buffer)) {
      buffer[n++] = v;
    } else {
      if (spill.empty()) spill.assign(buffer, buffer + n);
      spill.push_back(v);
    }
  }
  if (spill.empty()) {
    out->assign(buffer, buffer + n);
  } else {
    *out = std::move(spill);
  }
  return true;
}

bool ReadWeights(JsonCursor& c, std::vector<int64_t>* out) {
  return ReadSmallArray(c, out, [&](int64_t* v) { return c.ReadInt(v); });
}

bool ReadLevels(JsonCursor& c, std::vector<uint8_t>* out) {
  return ReadSmallArray(c, out, [&](uint8_t* level) {
    int64_t v = 0;
    if (!c.ReadInt(&v)) return false;
    if (v < 0 || v > 5) return c.Fail("expected a heat level from 0 to 5");
    *level = static_cast<uint8_t>(v);
    return true;
  });
}

bool ReadUint64(JsonCursor& c, uint64_t* out) {
  int64_t v = 0;
  if (!c.ReadInt(&v)) return false;
  if (v < 0) return c.Fail("expected a non-negative count");
  *out = static_cast<uint64_t>(v);
  return true;
}

bool ReadLineRef(JsonCursor& c, LineRef* ref) {
  int index = 0;
  return ReadArray(c,
                   [&] {
                     if (index > 1) return c.Fail("expected [file index, line] (two numbers)");
                     return c.ReadUint32(index++ == 0 ? &ref->file : &ref->line);
                   }) &&
         (index == 2 || c.Fail("expected [file index, line] (two numbers)"));
}

bool ReadFunction(JsonCursor& c, FunctionStats* fn) {
  return ReadObject(c, [&](std::string_view key) {
    if (key == "first_line") return c.ReadUint32(&fn->first_line);
    if (key == "last_line") return c.ReadUint32(&fn->last_line);
    if (key == "inlined") return c.ReadBool(&fn->inlined);
    if (key == "name") return c.ReadString(&fn->name);
    if (key == "self") return ReadWeights(c, &fn->self);
    if (key == "inclusive") return ReadWeights(c, &fn->inclusive);
    return c.Skip();
  });
}

bool ReadLine(JsonCursor& c, LineStats* line) {
  return ReadObject(c, [&](std::string_view key) {
    if (key == "line") return c.ReadUint32(&line->line);
    if (key == "function") return c.ReadString(&line->function);
    if (key == "inlined") return c.ReadBool(&line->inlined);
    if (key == "self") return ReadWeights(c, &line->self);
    if (key == "inclusive") return ReadWeights(c, &line->inclusive);
    if (key == "local_heat") return ReadLevels(c, &line->local_heat);
    if (key == "global_heat") return ReadLevels(c, &line->global_heat);
    return c.Skip();
  });
}

bool ReadFile(JsonCursor& c, FileStats* file) {
  const bool ok = ReadObject(c, [&](std::string_view key) {
    if (key == "path") return c.ReadString(&file->path);
    if (key == "lines") {
      return ReadArray(c, [&] {
        file->lines.emplace_back();
        return ReadLine(c, &file->lines.back());
      });
    }
    if (key == "functions") {
      return ReadArray(c, [&] {
        file->functions.emplace_back();
        return ReadFunction(c, &file->functions.back());
      });
    }
    return c.Skip();
  });
  // The writer leaves the file out of each function: it is the enclosing file's path.
  for (FunctionStats& fn : file->functions) fn.file = file->path;
  return ok;
}

bool ReadEvent(JsonCursor& c, EventInfo* e) {
  return ReadObject(c, [&](std::string_view key) {
    if (key == "name") return c.ReadString(&e->name);
    if (key == "unit") return c.ReadString(&e->unit);
    if (key == "period") return ReadUint64(c, &e->period);
    if (key == "frequency_hz") return c.ReadDouble(&e->frequency_hz);
    if (key == "total_weight") return c.ReadInt(&e->total_weight);
    return c.Skip();
  });
}

bool ReadHealth(JsonCursor& c, Health* h) {
  return ReadObject(c, [&](std::string_view key) {
    if (key == "engine") return c.ReadString(&h->engine);
    if (key == "engine_reason") return c.ReadString(&h->engine_reason);
    if (key == "unwinder") return c.ReadString(&h->unwinder);
    if (key == "requested_hz") return c.ReadDouble(&h->requested_hz);
    if (key == "achieved_hz") return c.ReadDouble(&h->achieved_hz);
    if (key == "samples") return ReadUint64(c, &h->samples);
    if (key == "dropped") return ReadUint64(c, &h->dropped);
    if (key == "truncated") return ReadUint64(c, &h->truncated);
    if (key == "broken") return ReadUint64(c, &h->broken);
    if (key == "overflow") return ReadUint64(c, &h->overflow);
    if (key == "threads_seen") return ReadUint64(c, &h->threads_seen);
    if (key == "overruns") return ReadUint64(c, &h->overruns);
    if (key == "symbolize_seconds") return c.ReadDouble(&h->symbolize_seconds);
    if (key == "symbol_cache_hits") return ReadUint64(c, &h->symbol_cache_hits);
    if (key == "symbol_cache_misses") return ReadUint64(c, &h->symbol_cache_misses);
    if (key == "write_seconds") return c.ReadDouble(&h->write_seconds);
    if (key == "threads") {
      return ReadArray(c, [&] {
        ThreadHealth& t = h->threads.emplace_back();
        return ReadObject(c, [&](std::string_view k) {
          if (k == "tid") return c.ReadInt(&t.tid);
          if (k == "name") return c.ReadString(&t.name);
          if (k == "cpu_seconds") return c.ReadDouble(&t.cpu_seconds);
          if (k == "expected") return c.ReadDouble(&t.expected);
          if (k == "taken") return ReadUint64(c, &t.taken);
          if (k == "weight") return ReadUint64(c, &t.weight);
          return c.Skip();
        });
      });
    }
    if (key == "unknown_frames") return ReadUint64(c, &h->unknown_frames);
    if (key == "warnings") {
      return ReadArray(c, [&] {
        h->warnings.emplace_back();
        return c.ReadString(&h->warnings.back());
      });
    }
    return c.Skip();
  });
}

bool ReadMetadata(JsonCursor& c, Metadata* m) {
  return ReadObject(c, [&](std::string_view key) {
    if (key == "program") return c.ReadString(&m->program);
    if (key == "pid") return c.ReadInt(&m->pid);
    if (key == "start_time_ns") return c.ReadInt(&m->start_time_ns);
    if (key == "duration_ns") return c.ReadInt(&m->duration_ns);
    return c.Skip();
  });
}

// A name or path from the file as an error message quotes it: one line (control characters
// as \xNN) and at most 120 bytes, however long the name is.
std::string Shown(std::string_view text) {
  constexpr size_t kMax = 120;
  std::string out;
  for (size_t i = 0; i < text.size() && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kMax) out += "...";
  return out;
}

// Every per-event vector has one entry per event; heat vectors may be absent (recomputed).
bool CheckShapes(JsonCursor& c, Annotations& a, size_t end) {
  const size_t n = a.events.size();
  auto bad = [&](const std::string& what) {
    return c.FailAt(end, "expected " + std::to_string(n) + " values (one per event) in " + what);
  };
  bool need_heat = false;
  for (const FileStats& file : a.files) {
    for (const LineStats& line : file.lines) {
      if (line.self.size() != n || line.inclusive.size() != n) {
        return bad("line " + std::to_string(line.line) + " of " + Shown(file.path));
      }
      if (line.local_heat.size() != n || line.global_heat.size() != n) need_heat = true;
    }
    for (const FunctionStats& fn : file.functions) {
      if (fn.self.size() != n || fn.inclusive.size() != n) return bad("function " + Shown(fn.name));
    }
  }
  for (const FunctionStats& fn : a.functions_without_source) {
    if (fn.self.size() != n || fn.inclusive.size() != n) return bad("function " + Shown(fn.name));
  }
  for (const CallEdge& edge : a.edges) {
    if (edge.weight.size() != n) return bad("an edge");
    if (edge.caller.file >= a.files.size() || edge.callee.file >= a.files.size()) {
      return c.FailAt(end, "expected edge file indices below " + std::to_string(a.files.size()));
    }
  }
  for (const LabelTotal& label : a.labels) {
    if (label.weight.size() != n)
      return bad("label " + Shown(label.key) + "=" + Shown(label.value));
  }
  if (need_heat) AssignHeat(a, a.heat_method, a.heat_threshold);
  return true;
}

bool ReadEdges(JsonCursor& c, size_t text_size, std::vector<CallEdge>* edges) {
  // An edge takes at least ~70 bytes as the writer spells it. Reserving by the bytes left
  // spares the vector's doublings, each of which would touch (and the kernel zero) fresh
  // pages; capacity the file does not use is never touched.
  edges->reserve(edges->size() + (text_size - c.position()) / 64);
  return ReadArray(c, [&] {
    edges->emplace_back();
    CallEdge& edge = edges->back();
    return ReadObject(c, [&](std::string_view k) {
      if (k == "caller") return ReadLineRef(c, &edge.caller);
      if (k == "callee") return ReadLineRef(c, &edge.callee);
      if (k == "inlined") return c.ReadBool(&edge.inlined);
      if (k == "weight") return ReadWeights(c, &edge.weight);
      return c.Skip();
    });
  });
}

// "labels": [{"key", "value", "weight"}]. Entries are sorted by key, then value, as the model
// keeps them; a pair listed twice is refused rather than merged, since no writer repeats one.
bool ReadLabels(JsonCursor& c, std::vector<LabelTotal>* labels) {
  std::vector<size_t> at;  // where each entry is, for errors
  const bool ok = ReadArray(c, [&] {
    LabelTotal& label = labels->emplace_back();
    size_t start = std::string_view::npos;
    bool has_key = false, has_value = false;
    const bool read = ReadObject(c, [&](std::string_view k) {
      if (start == std::string_view::npos) start = c.position();
      if (k == "key") {
        has_key = true;
        return c.ReadString(&label.key);
      }
      if (k == "value") {
        has_value = true;
        return c.ReadString(&label.value);
      }
      if (k == "weight") return ReadWeights(c, &label.weight);
      return c.Skip();
    });
    if (!read) return false;
    if (start == std::string_view::npos) start = c.position();
    if (!has_key || !has_value) {
      return c.FailAt(start,
                      "expected a label as {\"key\": ..., \"value\": ..., \"weight\": [...]}");
    }
    at.push_back(start);
    return true;
  });
  if (!ok) return false;
  std::vector<size_t> order(labels->size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto pair = [&](size_t i) { return std::tie((*labels)[i].key, (*labels)[i].value); };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return pair(a) < pair(b); });
  for (size_t i = 1; i < order.size(); ++i) {
    if (pair(order[i - 1]) == pair(order[i])) {
      const LabelTotal& twice = (*labels)[order[i]];
      return c.FailAt(std::max(at[order[i - 1]], at[order[i]]), "expected each label once, got " +
                                                                    Shown(twice.key) + "=" +
                                                                    Shown(twice.value) + " twice");
    }
  }
  std::vector<LabelTotal> sorted;
  sorted.reserve(order.size());
  for (size_t i : order) sorted.push_back(std::move((*labels)[i]));
  *labels = std::move(sorted);
  return true;
}

}  // namespace

Status ReadAnnotationJson(std::string_view text, const std::string& name, Annotations* out) {
  Annotations a;
  JsonCursor c(text);
  std::string format;
  int64_t version = 0;
  a.heat_threshold = 0.5;
  bool has_heat_method = false;
  bool ok = ReadObject(c, [&](std::string_view key) {
    if (key == "format") {
      const size_t at = c.position();
      if (!c.ReadString(&format)) return false;
      if (format != "inprof-annotations") {
        return c.FailAt(at, "expected \"format\": \"inprof-annotations\"");
      }
      return true;
    }
    if (key == "version") {
      const size_t at = c.position();
      if (!c.ReadInt(&version)) return false;
      if (version < 1 || version > kVersion) {
        return c.FailAt(at, "expected \"version\": 1 (this viewer reads version 1)");
      }
      return true;
    }
    if (key == "heat_threshold") return c.ReadDouble(&a.heat_threshold);
    if (key == "heat_method") {
      const size_t at = c.position();
      std::string method;
      if (!c.ReadString(&method)) return false;
      if (!ParseHeatMethod(method, &a.heat_method)) {
        return c.FailAt(at, "expected \"heat_method\": \"share\" or \"perf-heatmap\"");
      }
      has_heat_method = true;
      return true;
    }
    if (key == "metadata") return ReadMetadata(c, &a.meta);
    if (key == "health") return ReadHealth(c, &a.health);
    if (key == "events") {
      return ReadArray(c, [&] {
        a.events.emplace_back();
        return ReadEvent(c, &a.events.back());
      });
    }
    if (key == "files") {
      return ReadArray(c, [&] {
        a.files.emplace_back();
        return ReadFile(c, &a.files.back());
      });
    }
    if (key == "functions_without_source") {
      return ReadArray(c, [&] {
        a.functions_without_source.emplace_back();
        FunctionStats& fn = a.functions_without_source.back();
        // Such a function has no lines and the writer writes none: "first_line" here would
        // be read, shown in hottest_functions, and lost when written (found by the fuzzer).
        const bool ok = ReadFunction(c, &fn);
        fn.first_line = fn.last_line = 0;
        return ok;
      });
    }
    if (key == "edges") return ReadEdges(c, text.size(), &a.edges);
    if (key == "labels") return ReadLabels(c, &a.labels);
    return c.Skip();  // hottest_* are derived from the rest
  });
  if (ok && !c.AtEnd()) ok = c.Fail("expected nothing after the top-level object");
  if (ok && format.empty())
    ok = c.FailAt(0, "expected a top-level \"format\": \"inprof-annotations\"");
  if (ok && version == 0) ok = c.FailAt(0, "expected a top-level \"version\": 1");
  if (ok && !(a.heat_threshold > 0 && a.heat_threshold <= 1)) {
    ok = c.FailAt(0, "expected \"heat_threshold\" in (0, 1]");
  }
  if (ok) ok = CheckShapes(c, a, c.position());
  // Files without "heat_method" carry perf-heatmap's rank levels, written before the share
  // method existed: recompute them, so every file reads with the same meaning of a level.
  if (ok && !has_heat_method) AssignHeat(a, HeatMethod::kShare);
  if (!ok) return Status::Error(name + ":" + std::to_string(c.error_line()) + ": " + c.error());
  *out = std::move(a);
  return Status::Ok();
}

}  // namespace inprof
