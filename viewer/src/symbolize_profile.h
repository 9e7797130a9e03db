// Raw profiles (docs/raw-profile.md) into the outputs in-process symbolization writes:
// `inprof symbolize-profile`, and what `inprof record` does with the raw profiles of a
// process tree when the command ends.
//
// Every input is symbolized through one Symbolizer, so a binary shared by many processes (a
// compiler run 200 times, libc) is opened and indexed once. With several inputs, or when
// asked, each process's samples go under a root frame that names the process. Not
// async-signal-safe (the viewer never runs in a signal handler).
#ifndef INPROF_VIEWER_SYMBOLIZE_PROFILE_H_
#define INPROF_VIEWER_SYMBOLIZE_PROFILE_H_

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "inprof/profile.h"
#include "inprof/status.h"

namespace inprof::viewer {

// The file names `inprof record` and `symbolize-profile` write by default, in the order
// they are listed: annotation JSON, perf.log, folded stacks, flame graph, pprof.
const std::vector<std::string>& DefaultOutputNames();

struct SymbolizeProfileOptions {
  std::vector<std::string> inputs;      // raw files, or directories of *.inprofraw files
  std::string dir;                      // where the outputs go (created when missing)
  std::vector<std::string> outputs;     // file names in `dir`; empty: DefaultOutputNames()
  std::vector<std::string> debug_dirs;  // --debug-dir: where binaries and debug files are
  bool process_roots = false;           // a root frame per process even with one input
  bool per_pid = false;                 // root frames "comm-PID" (implies process_roots)
  // The inputs are a recording's spool (inprof record): a raw file that cannot be read is
  // reported in `notes` and left out instead of failing the run (one broken file must not
  // lose the others' samples), and an empty spool means no process took a sample.
  bool recording = false;
};

// One process, as its raw file told it.
struct ProcessRecord {
  std::string file;
  int64_t pid = 0;
  std::string comm;
  std::string root;  // its root frame (comm, or comm-PID)
  bool complete = true;
  size_t stacks = 0;   // distinct stacks with a sample
  int64_t weight = 0;  // sum of its samples' weights of the first event
};

struct SymbolizeProfileReport {
  std::vector<std::string> written;      // paths of the files written
  std::vector<ProcessRecord> processes;  // every input read, in the profile's order
  std::vector<std::string> notes;        // processes whose samples are missing, skipped files
  std::vector<std::string> warnings;     // the symbolizer's: binaries not found as recorded
  Profile profile;                       // what was written
  // The recorder's own numbers (also in the profile's health warnings).
  uint64_t binaries = 0;    // files the symbolizer opened
  uint64_t addresses = 0;   // distinct addresses it resolved
  uint64_t cache_hits = 0;  // answers from the symbol cache
  double seconds = 0;       // spent symbolizing
};

// Reads every input, symbolizes and writes the outputs. A profile without any sample writes
// nothing and returns a kNotFound status that says so; `report->processes` and `notes` are
// filled all the same. Errors name the file (and line, for malformed input).
Status SymbolizeProfiles(const SymbolizeProfileOptions& options, SymbolizeProfileReport* report);

// "Processes by cpu" for the summary: the root frames ranked by weight of the first event,
// processes of the same name together, `limit` rows and "and K more processes: X %".
void PrintProcessShares(const SymbolizeProfileReport& report, size_t limit, std::ostream& out);

// The lines about processes whose samples are missing and binaries the symbolizer could not
// use as recorded, for stderr.
void PrintNotes(const SymbolizeProfileReport& report, std::ostream& out);

// `inprof symbolize-profile RAW... -o DIR`: `args` from the command name on.
int RunSymbolizeProfile(const std::vector<std::string>& args);

}  // namespace inprof::viewer

#endif  // INPROF_VIEWER_SYMBOLIZE_PROFILE_H_
