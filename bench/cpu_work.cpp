// Fixed CPU work for overhead measurements: two threads each do the same number of rounds
// of a hash loop, a small matrix product and a sort, with a few function levels so the
// profiler walks realistic stacks. The wall time of the whole run is what overhead.sh times.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

__attribute__((noinline)) uint64_t Hash(uint64_t seed, int n) {
  uint64_t h = seed;
  for (int i = 0; i < n; ++i) h = (h ^ static_cast<uint64_t>(i)) * 0x100000001B3ull;
  return h;
}

__attribute__((noinline)) double Matrix(int n) {
  std::vector<double> a(n * n, 1.25), b(n * n, 0.75), c(n * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int k = 0; k < n; ++k) s += a[i * n + k] * b[k * n + j];
      c[i * n + j] = s;
    }
  return c[n + 1];
}

__attribute__((noinline)) uint64_t Sort(uint64_t seed, int n) {
  std::vector<uint64_t> v(n);
  for (auto& x : v) x = seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  std::sort(v.begin(), v.end());
  return v[n / 2];
}

__attribute__((noinline)) uint64_t Round(uint64_t seed) {
  return Hash(seed, 200000) ^ static_cast<uint64_t>(Matrix(48)) ^ Sort(seed, 20000);
}

__attribute__((noinline)) void Worker(int rounds, uint64_t* out) {
  uint64_t acc = 0;
  for (int r = 0; r < rounds; ++r) acc ^= Round(acc + static_cast<uint64_t>(r));
  *out = acc;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5000;
  uint64_t a = 0, b = 0;
  std::thread t(Worker, rounds, &a);
  Worker(rounds, &b);
  t.join();
  std::printf("%llx\n", static_cast<unsigned long long>(a + b));
  return 0;
}
