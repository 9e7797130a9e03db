// The functions of the C math library that libinprof.so calls, its own: the runtime's code
// and the C++ standard library linked into it use seven of them (expm1, ldexp, lround,
// llround, sqrt, and the rounding-mode pair the standard library's floating-point
// from_chars/to_chars call), and each process that loads the runtime would otherwise map and relocate libm.so
// for them and resolve its ifuncs (docs/performance.md "Loading the runtime"). libm_local.cpp
// defines the C names too, local to libinprof.so (the version script exports the C API
// alone): the program's own calls still reach libm. Control path; no allocation.
#ifndef INPROF_SDK_SRC_API_LIBM_LOCAL_H_
#define INPROF_SDK_SRC_API_LIBM_LOCAL_H_

namespace inprof::internal {

// e^x - 1, within 2 units in the last place of the C library's over the whole domain, exact
// also where x is tiny (no cancellation).
double LocalExpm1(double x);
// x times 2^exponent, rounded once, as ldexp.
double LocalLdexp(double x, int exponent);
// x rounded to the nearest integer, halves away from zero, as lround/llround (a value out of
// range, or NaN, gives the most negative or most positive value).
long long LocalLlround(double x);
double LocalSqrt(double x);
// The rounding mode of floating-point arithmetic, in <fenv.h>'s FE_* values of the target.
int LocalFegetround();
// Sets it; non-zero (and nothing changed) for a value that is not an FE_* mode.
int LocalFesetround(int mode);

}  // namespace inprof::internal

#endif  // INPROF_SDK_SRC_API_LIBM_LOCAL_H_
