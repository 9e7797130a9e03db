// What the raw profile's test files share: text round trips and timeline comparison.
#ifndef INPROF_TESTS_EXPORTERS_RAW_TEST_UTIL_H_
#define INPROF_TESTS_EXPORTERS_RAW_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "inprof/raw_profile.h"

namespace inprof::test {

inline std::string Write(const RawProfile& p) {
  std::ostringstream out;
  WriteRawProfile(p, out);
  return out.str();
}

inline Status Read(std::string_view text, RawProfile* p) {
  std::istringstream in{std::string(text)};
  return ReadRawProfile(in, "t.inprofraw", p);
}

inline void ExpectSameTimeline(const std::vector<TimedSample>& a, const std::vector<TimedSample>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].time_ns, b[i].time_ns) << "timed sample " << i;
    EXPECT_EQ(a[i].sample, b[i].sample) << "timed sample " << i;
    EXPECT_EQ(a[i].event, b[i].event) << "timed sample " << i;
    EXPECT_EQ(a[i].weight, b[i].weight) << "timed sample " << i;
  }
}

}  // namespace inprof::test

#endif  // INPROF_TESTS_EXPORTERS_RAW_TEST_UTIL_H_
