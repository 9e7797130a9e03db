// pprof's profile.proto (docs/pprof.md), written and read back, and the gzip framing pprof
// files come in.
//
// Thread-safety: reentrant. Not async-signal-safe.
#ifndef INPROF_PPROF_H_
#define INPROF_PPROF_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "inprof/profile.h"
#include "inprof/status.h"

namespace inprof {

// pprof's profile.proto of every event of `profile` (docs/pprof.md): EncodePprof gives the
// uncompressed message, WritePprof writes it gzipped; false when the stream or zlib fails.
// Deterministic: equal profiles give identical bytes. Not async-signal-safe.
std::string EncodePprof(const Profile& profile);
bool WritePprof(const Profile& profile, std::ostream& out);

// The sample types EncodePprof writes for `profile`, in order: an event with a period above 1
// (time based) gets the number of periods ("samples/count" for the first event,
// "<event>_samples/count" for the others) and then its own column in its unit; any other
// event gets its own column only. For writers of metadata about a pprof (Pyroscope's
// sample_type_config). Not async-signal-safe.
struct PprofSampleType {
  std::string type;
  std::string unit;
  size_t event = 0;             // index into Profile::events
  bool counts_periods = false;  // the number of periods (samples), not the event's own unit
};
std::vector<PprofSampleType> PprofSampleTypes(const Profile& profile);

// pprof's profile.proto, gzipped (as pprof files are) or not, as inprof and Go write it:
// one event per sample type, values in the type's unit, the default sample type first
// (pprof's rule: the one default_sample_type names, else the last); Lines become frames
// with their inline chain, "thread id"/"thread name" labels the sample's thread, other
// labels Labels. A gzipped input that decompresses to more than `max_bytes` is refused.
// Errors read "NAME: pprof: what is wrong" (docs/pprof.md, "Reading pprof").
Status ReadPprof(std::string_view bytes, const std::string& name, Profile* out,
                 uint64_t max_bytes = uint64_t{1} << 32);
// A gzip stream (the magic bytes 1f 8b), or bytes that frame as an uncompressed
// profile.proto message with its string table.
bool LooksLikePprof(std::string_view bytes);
bool IsGzip(std::string_view bytes);
// Decompresses a gzip (or zlib) stream, at most `max_bytes` of output; errors name `name`.
Status Gunzip(std::string_view gz, const std::string& name, uint64_t max_bytes, std::string* out);

}  // namespace inprof

#endif  // INPROF_PPROF_H_
