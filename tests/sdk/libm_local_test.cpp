// The runtime's own math functions (libinprof.so needs no libm.so) answer as the C
// library's do.
#include "api/libm_local.h"

#include <fenv.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace inprof::internal {
namespace {

// How many representable doubles lie between a and b.
int64_t UlpsApart(double a, double b) {
  int64_t ia, ib;
  std::memcpy(&ia, &a, sizeof a);
  std::memcpy(&ib, &b, sizeof b);
  if (ia < 0) ia = std::numeric_limits<int64_t>::min() - ia;
  if (ib < 0) ib = std::numeric_limits<int64_t>::min() - ib;
  return ia > ib ? ia - ib : ib - ia;
}

TEST(LibmLocal, Expm1WithinTwoUlpsOfTheCLibrarysOverTheDomain) {
  std::vector<double> xs = {0.0,    -0.0,   1e-300, -1e-300, 5e-324, 1e-17, -1e-17, 1e-9,
                            -1e-9,  0.1,    -0.1,   0.3465,  -0.3465, 0.3466, -0.3466, 0.5,
                            -0.5,   1.0,    -1.0,   2.5,     -2.5,   10.0,   -10.0,  37.9,
                            -37.9,  100.0,  700.0,  709.78,  -745.0, -1e300};
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> wide(-40.0, 709.0);
  std::uniform_real_distribution<double> narrow(-1.0, 1.0);
  for (int i = 0; i < 20000; ++i) xs.push_back(wide(rng));
  for (int i = 0; i < 20000; ++i) xs.push_back(narrow(rng) * std::pow(10.0, -(i % 16)));
  for (const double x : xs) {
    EXPECT_LE(UlpsApart(LocalExpm1(x), std::expm1(x)), 2) << "x=" << x;
  }
  EXPECT_TRUE(std::isinf(LocalExpm1(710.0)));
  EXPECT_EQ(LocalExpm1(-std::numeric_limits<double>::infinity()), -1.0);
  EXPECT_TRUE(std::isnan(LocalExpm1(std::nan(""))));
  // What the allocation sampler computes: a 16-byte allocation at a 512 KiB rate.
  EXPECT_LE(UlpsApart(LocalExpm1(-16.0 / 524288.0), std::expm1(-16.0 / 524288.0)), 1);
}

TEST(LibmLocal, LlroundRoundsHalvesAwayFromZeroAsTheCLibrary) {
  std::vector<double> xs = {0.0,  0.5,   -0.5,  1.5,   -1.5,  2.5,  -2.5, 0.49999999999999994,
                            -0.49999999999999994, 4503599627370495.5, -4503599627370495.5,
                            4503599627370496.0, 9007199254740993.0, 1e18, -1e18,
                            9223372036854774784.0, -9223372036854775808.0};
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> d(-1e6, 1e6);
  for (int i = 0; i < 20000; ++i) xs.push_back(d(rng));
  for (int i = 0; i < 2000; ++i) xs.push_back(std::floor(d(rng)) + 0.5);
  for (const double x : xs) {
    EXPECT_EQ(LocalLlround(x), std::llround(x)) << "x=" << x;
    EXPECT_EQ(static_cast<long>(LocalLlround(x)), std::lround(x)) << "x=" << x;
  }
}

TEST(LibmLocal, SqrtAndLdexpAreExact) {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> d(0.0, 1e12);
  for (int i = 0; i < 20000; ++i) {
    const double x = d(rng);
    EXPECT_EQ(LocalSqrt(x), std::sqrt(x)) << x;
  }
  EXPECT_EQ(LocalSqrt(0.0), 0.0);
  EXPECT_TRUE(std::isnan(LocalSqrt(-1.0)));
  const std::vector<double> xs = {1.0, -1.0, 0.75, 1.2345678901234567, 5e-324, 2.2250738585072014e-308,
                                  1.7976931348623157e308, 3.0000000000000004};
  for (const double x : xs) {
    for (int e = -2200; e <= 2200; e += (e > -1100 && e < 1100) ? 37 : 1) {
      const double mine = LocalLdexp(x, e);
      const double theirs = std::ldexp(x, e);
      EXPECT_TRUE(mine == theirs || (std::isnan(mine) && std::isnan(theirs)))
          << x << " * 2^" << e << ": " << mine << " against " << theirs;
    }
  }
}

TEST(LibmLocal, RoundingModesAreTheCLibrarysModes) {
  const int before = fegetround();
  EXPECT_EQ(LocalFegetround(), before);
  for (const int mode : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO, FE_TONEAREST}) {
    ASSERT_EQ(LocalFesetround(mode), 0) << mode;
    EXPECT_EQ(fegetround(), mode);
    EXPECT_EQ(LocalFegetround(), mode);
  }
  // The mode takes effect on arithmetic (the SSE unit's on x86-64, not only the x87's): 1/3
  // rounded up and down are a last place apart.
  volatile double one = 1.0, three = 3.0;
  ASSERT_EQ(LocalFesetround(FE_UPWARD), 0);
  volatile double up = one / three;
  ASSERT_EQ(LocalFesetround(FE_DOWNWARD), 0);
  volatile double down = one / three;
  ASSERT_EQ(LocalFesetround(FE_TONEAREST), 0);
  EXPECT_EQ(UlpsApart(up, down), 1);
  EXPECT_GT(up, down);
  EXPECT_NE(LocalFesetround(0x12345), 0);
  EXPECT_EQ(LocalFegetround(), FE_TONEAREST);
  ASSERT_EQ(LocalFesetround(before), 0);
}

}  // namespace
}  // namespace inprof::internal
