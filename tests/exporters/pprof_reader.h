// A small profile.proto reader for tests: gunzips and decodes what the pprof writer (or any
// pprof producer) wrote, independently of the writer's code, so tests check the bytes.
#ifndef INPROF_TESTS_EXPORTERS_PPROF_READER_H_
#define INPROF_TESTS_EXPORTERS_PPROF_READER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace inprof::test {

struct PprofLine {
  uint64_t function_id = 0;
  int64_t line = 0;
  int64_t column = 0;
};
struct PprofLocation {
  uint64_t id = 0, mapping_id = 0, address = 0;
  std::vector<PprofLine> lines;  // innermost first
};
struct PprofFunction {
  uint64_t id = 0;
  int64_t name = 0, system_name = 0, filename = 0, start_line = 0;
};
struct PprofMapping {
  uint64_t id = 0, start = 0, limit = 0, offset = 0;
  int64_t filename = 0, build_id = 0;
  bool has_functions = false, has_filenames = false, has_line_numbers = false,
       has_inline_frames = false;
};
struct PprofLabel {
  int64_t key = 0, str = 0, num = 0;
};
struct PprofSample {
  std::vector<uint64_t> location_ids;  // leaf first
  std::vector<int64_t> values;
  std::vector<PprofLabel> labels;
};
struct PprofValueType {
  int64_t type = 0, unit = 0;
};
struct PprofProfile {
  std::vector<PprofValueType> sample_types;
  std::vector<PprofSample> samples;
  std::vector<PprofMapping> mappings;
  std::vector<PprofLocation> locations;
  std::vector<PprofFunction> functions;
  std::vector<std::string> strings;
  int64_t time_nanos = 0, duration_nanos = 0, period = 0, default_sample_type = 0;
  PprofValueType period_type;
  std::vector<int64_t> comments;

  const std::string& S(int64_t i) const;  // string table entry; throws when out of range
  const PprofLocation& Location(uint64_t id) const;
  const PprofFunction& Function(uint64_t id) const;
  const PprofMapping& Mapping(uint64_t id) const;
};

// Decodes an uncompressed Profile message; false with `error` set on malformed input.
bool DecodePprof(std::string_view bytes, PprofProfile* out, std::string* error);
// Gunzips `gz` (a gzip member) into `out`.
bool Gunzip(std::string_view gz, std::string* out, std::string* error);

// A readable, deterministic dump of the whole profile with ids resolved: samples as
// "values: fn (file:line) <- ..." leaf first, inline levels joined by " / ".
std::string DumpPprof(const PprofProfile& p);

}  // namespace inprof::test

#endif  // INPROF_TESTS_EXPORTERS_PPROF_READER_H_
