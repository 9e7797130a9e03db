// The runtime's own math functions (libm_local.h): libinprof.so needs no libm.so.
#include "api/libm_local.h"

#include <climits>
#include <cstdint>
#include <cstring>

namespace inprof::internal {

double LocalExpm1(double x) {
  if (x != x) return x;                                     // NaN
  if (x > 709.782712893383973096) return __builtin_inf();  // past the largest double
  if (x < -38.0) return -1.0;  // e^x is below half a unit in the last place of 1
  // x = k ln 2 + r with |r| <= ln 2 / 2: ln 2 in two parts, the first with enough trailing
  // zero bits that k times it is exact (as in fdlibm).
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kInvLn2 = 1.44269504088896338700e+00;
  constexpr double kHalfLn2 = 0.346573590279972654709;
  long long k = 0;
  double r = x;
  if (x > kHalfLn2 || x < -kHalfLn2) {
    k = LocalLlround(x * kInvLn2);
    const double kd = static_cast<double>(k);
    r = (x - kd * kLn2Hi) - kd * kLn2Lo;
  }
  // e^r - 1 = r (1 + r/2 (1 + r/3 (1 + ...))), the innermost first: |r| <= 0.35, and the
  // 18th term is below 1e-20 of the sum.
  double t = 1.0;
  for (int n = 18; n >= 2; --n) t = 1.0 + t * r / n;
  const double em1 = r * t;
  if (k == 0) return em1;
  // 2^k e^r - 1 = 2^k em1 + (2^k - 1): both parts exact where 2^k - 1 is (|k| <= 53), one
  // rounding in the sum. Beyond, the 1 is below the result's last place (or the result is
  // -1 but for it).
  if (k >= -53 && k <= 53) return LocalLdexp(em1, static_cast<int>(k)) + (LocalLdexp(1.0, static_cast<int>(k)) - 1.0);
  return LocalLdexp(1.0 + em1, static_cast<int>(k)) - 1.0;
}

namespace {
// 2^k for k in [-1022, 1023], from its bits.
double PowerOfTwo(int k) {
  const uint64_t bits = static_cast<uint64_t>(k + 1023) << 52;
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}
}  // namespace

double LocalLdexp(double x, int exponent) {
  // In at most three products, each factor a normal double. Towards the subnormal range the
  // steps stop 53 binades short of it, so that only the last product rounds there: one
  // rounding, as a single exact scaling would.
  if (exponent > 1023) {
    x *= PowerOfTwo(1023);
    exponent -= 1023;
    if (exponent > 1023) {
      x *= PowerOfTwo(1023);
      exponent -= 1023;
      if (exponent > 1023) exponent = 1023;
    }
  } else if (exponent < -1022) {
    x *= PowerOfTwo(-1022 + 53);
    exponent += 1022 - 53;
    if (exponent < -1022) {
      x *= PowerOfTwo(-1022 + 53);
      exponent += 1022 - 53;
      if (exponent < -1022) exponent = -1022;
    }
  }
  return x * PowerOfTwo(exponent);
}

long long LocalLlround(double x) {
  constexpr double kLimit = 9223372036854775808.0;  // 2^63
  if (!(x > -kLimit && x < kLimit)) return x > 0 ? LLONG_MAX : LLONG_MIN;
  long long i = static_cast<long long>(x);  // toward zero
  // Exact: below 2^53 both are doubles an integer apart at most; above, x is an integer.
  const double fraction = x - static_cast<double>(i);
  if (fraction >= 0.5) {
    ++i;
  } else if (fraction <= -0.5) {
    --i;
  }
  return i;
}

double LocalSqrt(double x) {
  double root;
#if defined(__x86_64__)
  __asm__("sqrtsd %1, %0" : "=x"(root) : "x"(x));
#elif defined(__aarch64__)
  __asm__("fsqrt %d0, %d1" : "=w"(root) : "w"(x));
#else
#error "LocalSqrt: x86-64 and aarch64 only"
#endif
  return root;
}

// The FE_* modes are the rounding-control bits themselves: of the x87 control word (and,
// shifted by 3, of MXCSR) on x86-64, of FPCR on aarch64.
#if defined(__x86_64__)
namespace {
constexpr int kRoundingBits = 0xc00;
}  // namespace

int LocalFegetround() {
  unsigned short control;
  __asm__ volatile("fnstcw %0" : "=m"(control));
  return control & kRoundingBits;
}

int LocalFesetround(int mode) {
  if ((mode & ~kRoundingBits) != 0) return 1;
  unsigned short control;
  __asm__ volatile("fnstcw %0" : "=m"(control));
  control = static_cast<unsigned short>((control & ~kRoundingBits) | mode);
  __asm__ volatile("fldcw %0" : : "m"(control));
  unsigned int mxcsr;
  __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
  mxcsr = (mxcsr & ~(static_cast<unsigned int>(kRoundingBits) << 3)) |
          (static_cast<unsigned int>(mode) << 3);
  __asm__ volatile("ldmxcsr %0" : : "m"(mxcsr));
  return 0;
}
#elif defined(__aarch64__)
namespace {
constexpr unsigned long kRoundingBits = 0xc00000;
}  // namespace

int LocalFegetround() {
  unsigned long fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  return static_cast<int>(fpcr & kRoundingBits);
}

int LocalFesetround(int mode) {
  if ((static_cast<unsigned long>(mode) & ~kRoundingBits) != 0) return 1;
  unsigned long fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  fpcr = (fpcr & ~kRoundingBits) | static_cast<unsigned long>(mode);
  __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
  return 0;
}
#endif

}  // namespace inprof::internal

// The C names, for the runtime's calls and the standard library's linked into it. Local to
// the library (libinprof.map: the compiler keeps the C library's visibility for these names):
// exported, they would replace the C library's for the program a preloaded runtime runs in
// (its sqrt(-1) would no longer set errno). A test that checks the functions against the C
// library's builds this file without them.
#ifndef INPROF_LIBM_LOCAL_NO_C_NAMES
extern "C" {
double expm1(double x) { return inprof::internal::LocalExpm1(x); }
long lround(double x) { return static_cast<long>(inprof::internal::LocalLlround(x)); }
long long llround(double x) { return inprof::internal::LocalLlround(x); }
double sqrt(double x) { return inprof::internal::LocalSqrt(x); }
double ldexp(double x, int exponent) { return inprof::internal::LocalLdexp(x, exponent); }
int fegetround(void) { return inprof::internal::LocalFegetround(); }
int fesetround(int mode) { return inprof::internal::LocalFesetround(mode); }
}
#endif
