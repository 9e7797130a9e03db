// A small multi-threaded program with hot spots a person can recognise in a profile:
//   main thread      parse_records()  — text parsing           (~1 s of CPU)
//   "checksum" thread checksum_block() — a CRC-like byte loop  (~1 s)
//   "matrix" thread   multiply_matrices() — dense 3-loop product (~1.5 s)
//   "sort" thread     sort_batch()      — std::sort on random keys (~0.5 s)
// Built with frame pointers so the fp unwinder sees whole stacks. Run it under the
// profiler without changing it:
//   LD_PRELOAD=build/sdk/libinprof.so INPROF_OUTPUT=out.folded,perf.log build/examples/hotspots
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

__attribute__((noinline)) uint32_t checksum_block(const std::vector<uint8_t>& data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (uint8_t byte : data) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

__attribute__((noinline)) double multiply_matrices(const std::vector<double>& a,
                                                   const std::vector<double>& b,
                                                   std::vector<double>& c, int n) {
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int k = 0; k < n; ++k) sum += a[i * n + k] * b[k * n + j];
      c[i * n + j] = sum;
    }
  }
  return c[0];
}

__attribute__((noinline)) uint64_t sort_batch(std::mt19937_64& rng) {
  std::vector<uint64_t> keys(200000);
  for (auto& k : keys) k = rng();
  std::sort(keys.begin(), keys.end());
  return keys[keys.size() / 2];
}

__attribute__((noinline)) long parse_records(const std::string& text) {
  long total = 0;
  long value = 0;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      value = value * 10 + (c - '0');
    } else if (c == ',') {
      total += value;
      value = 0;
    }
  }
  return total + value;
}

void checksum_worker(double seconds, uint32_t* out) {
  std::vector<uint8_t> data(1 << 16);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31);
  const double end = CpuSeconds() + seconds;
  uint32_t acc = 0;
  while (CpuSeconds() < end) acc ^= checksum_block(data);
  *out = acc;
}

void matrix_worker(double seconds, double* out) {
  const int n = 96;
  std::vector<double> a(n * n, 1.5), b(n * n, 0.5), c(n * n);
  const double end = CpuSeconds() + seconds;
  double acc = 0;
  while (CpuSeconds() < end) acc += multiply_matrices(a, b, c, n);
  *out = acc;
}

void sort_worker(double seconds, uint64_t* out) {
  std::mt19937_64 rng(42);
  const double end = CpuSeconds() + seconds;
  uint64_t acc = 0;
  while (CpuSeconds() < end) acc ^= sort_batch(rng);
  *out = acc;
}

}  // namespace

int main(int argc, char** argv) {
  const double scale = argc > 1 ? std::atof(argv[1]) : 1.0;
  uint32_t crc = 0;
  double product = 0;
  uint64_t median = 0;
  std::thread checksum(checksum_worker, 1.0 * scale, &crc);
  std::thread matrix(matrix_worker, 1.5 * scale, &product);
  std::thread sorter(sort_worker, 0.5 * scale, &median);

  std::string text;
  for (int i = 0; i < 200000; ++i) text += std::to_string(i * 7919 % 100003) + ",";
  const double end = CpuSeconds() + 1.0 * scale;
  long total = 0;
  while (CpuSeconds() < end) total += parse_records(text);

  checksum.join();
  matrix.join();
  sorter.join();
  std::printf("hotspots: parsed=%ld crc=%08x product=%.1f median=%llu\n", total, crc, product,
              static_cast<unsigned long long>(median));
  return 0;
}
