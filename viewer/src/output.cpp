// Number formatting and colours shared by the subcommands.
#include <cstdio>
#include <string>

#include "cli.h"
#include "inprof/annotations.h"
#include "inprof/json.h"
#include "inprof/printable.h"
#include "viewer.h"

namespace inprof::viewer {

int64_t WeightAt(const std::vector<int64_t>& weights, size_t event) {
  return event < weights.size() ? weights[event] : 0;
}

int LevelAt(const std::vector<uint8_t>& levels, size_t event) {
  return event < levels.size() ? levels[event] : 0;
}

std::string FormatWeight(int64_t weight, int64_t total, bool absolute, int width) {
  char buffer[64];
  if (absolute) {
    std::snprintf(buffer, sizeof buffer, "%*lld", width, static_cast<long long>(weight));
  } else {
    const double percent = total > 0 ? 100.0 * static_cast<double>(weight) / total : 0.0;
    std::snprintf(buffer, sizeof buffer, "%*.2f%%", width - 1, percent);
  }
  return buffer;
}

std::string WeightUnit(const EventInfo& e) {
  return e.period > 1 || e.unit.empty() ? std::string("samples") : e.unit;
}

std::string FormatDuration(double ns) {
  char buffer[64];
  const double a = ns < 0 ? -ns : ns;
  const char* unit = a >= 1e9 ? "s" : a >= 1e6 ? "ms" : a >= 1e3 ? "us" : "ns";
  const double scaled = ns / (a >= 1e9 ? 1e9 : a >= 1e6 ? 1e6 : a >= 1e3 ? 1e3 : 1);
  if (scaled >= 1000 || scaled <= -1000) {
    std::snprintf(buffer, sizeof buffer, "%.0f %s", scaled, unit);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.3g %s", scaled, unit);
  }
  return buffer;
}

std::string EventHeading(const EventInfo& e, int64_t total) {
  const bool time = e.unit == "nanoseconds";
  std::string text = "event " + e.name + " (" + WeightUnit(e);
  if (e.period > 1) {
    text += " of " + (time ? FormatDuration(static_cast<double>(e.period))
                           : std::to_string(e.period) + " " + e.unit);
  }
  text += "), total " + std::to_string(total);
  if (time) {
    text += " (" +
            FormatDuration(static_cast<double>(total) *
                           static_cast<double>(e.period > 1 ? e.period : 1)) +
            ")";
  } else if (e.period > 1) {
    text += " (" + std::to_string(total * static_cast<int64_t>(e.period)) + " " + e.unit + ")";
  }
  return text;
}

std::string JsonWeight(int64_t weight, int64_t total, bool absolute) {
  if (absolute) return std::to_string(weight);
  char buffer[64];
  const double percent = total > 0 ? 100.0 * static_cast<double>(weight) / total : 0.0;
  std::snprintf(buffer, sizeof buffer, "%.2f", percent);
  return buffer;
}

std::string JsonString(const std::string& text) {
  // The project's one JSON string writer: bytes that are not UTF-8 become U+FFFD, so a
  // symbol or path from a binary never makes the output invalid JSON.
  std::string out;
  internal::AppendJsonString(out, text);
  return out;
}

std::string Printable(const std::string& text) {
  return inprof::Printable(text, {.named_escapes = true});
}

const char* HeatColor(int level, bool color) {
  if (!color) return "";
  switch (level) {
    case 5:
      return "\033[1;31m";  // bold red
    case 4:
      return "\033[31m";  // red
    case 3:
      return "\033[33m";  // yellow
    case 2:
      return "\033[32m";  // green
    case 1:
      return "\033[36m";  // cyan
    default:
      return "";
  }
}

const char* ResetColor(bool color) { return color ? "\033[0m" : ""; }

std::vector<OptionSpec> HeatOptionSpecs(HeatChoice* h) {
  return {
      {{"--heat"},
       "share or perf-heatmap",
       [h](const std::string& text) {
         HeatMethod method;
         if (!ParseHeatMethod(text, &method)) return false;
         h->method = method;
         return true;
       }},
      {{"--threshold"},
       "a value in (0, 1]",
       [h](const std::string& text) {
         return ParseDecimal(text, &h->threshold) && h->threshold > 0 && h->threshold <= 1;
       }},
  };
}

void ApplyHeat(const HeatChoice& heat, Annotations& a) {
  if (!heat.method && !(heat.threshold > 0)) return;
  // A threshold only means something to perf-heatmap's ranking, so it asks for it.
  AssignHeat(a, heat.method.value_or(HeatMethod::kPerfHeatmap),
             heat.threshold > 0 ? heat.threshold : a.heat_threshold);
}

}  // namespace inprof::viewer
