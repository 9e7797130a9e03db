// What every reader must guarantee on any input, as checks shared by the libFuzzer targets
// (fuzz/*_fuzz.cpp) and the regression test that replays the committed corpus
// (tests/exporters/reader_regression_test.cpp):
//
// - it returns (no crash, no hang, no undefined behaviour: the sanitizers see to that);
// - a refusal reads "NAME:LINE: what was expected", LINE within the input's lines;
// - what it accepts survives a round trip: written back by the matching writer, read again
//   without error, and written again to the same bytes. The annotation model built from an
//   accepted profile must also survive the annotation JSON writer and reader.
//
// Each check returns an empty string when all of that holds, else what went wrong.
#ifndef INPROF_FUZZ_READER_CHECKS_H_
#define INPROF_FUZZ_READER_CHECKS_H_

#include <string>
#include <string_view>

namespace inprof {
class Status;
}

namespace inprof::fuzz {

// The name the checks give the readers; refusals must start with it.
inline constexpr const char* kInputName = "input";

// A refusal's form: "input:LINE: what" on one line, 1 <= LINE <= the input's line count.
std::string CheckRefusal(const Status& status, std::string_view input);

std::string CheckAnnotationJson(std::string_view input);
std::string CheckFolded(std::string_view input);
std::string CheckPerfLog(std::string_view input);
// Also checks the model's invariants on what it accepts (timeline in time order, indices in
// range, each sample's timed weights adding up to at most its weight).
std::string CheckSpeedscope(std::string_view input);
// pprof, gzipped or not: refusals read "input: pprof: what" or "input: gzip: what" (a binary
// format has no lines); what is accepted survives inprof's pprof writer and reader.
std::string CheckPprof(std::string_view input);
#ifdef INPROF_HAVE_PERF_SCRIPT_READER
std::string CheckPerfScript(std::string_view input);
std::string CheckPerfReport(std::string_view input);
#endif

}  // namespace inprof::fuzz

#endif  // INPROF_FUZZ_READER_CHECKS_H_
