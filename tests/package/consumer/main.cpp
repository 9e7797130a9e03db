// Starts, dumps and stops through the installed headers and library.
#include <inprof/inprof.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::string config = std::string("quiet=1,output=") + argv[1];
  inprof::Profiler profiler(config.c_str());
  if (!profiler.ok()) {
    std::fprintf(stderr, "%s\n", profiler.error().c_str());
    return 1;
  }
  volatile double x = 0;
  for (long i = 0; i < 50000000; ++i) x = x * 0.5 + 1;
  return profiler.Stop() == INPROF_OK ? 0 : 1;
}
