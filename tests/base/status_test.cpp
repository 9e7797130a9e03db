#include "inprof/status.h"

#include <cerrno>
#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace inprof {
namespace {

StatusOr<int> Half(int n) {
  if (n % 2 != 0) return Status::InvalidArgument(std::to_string(n) + " is odd");
  return n / 2;
}

TEST(StatusTest, OkHasNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_TRUE(s.message().empty());
}

TEST(StatusTest, ErrorIsNeverOk) {
  // A caller that passes kOk to Error still gets a failure: an error without a code would
  // read as success.
  Status s = Status::Error("broken", StatusCode::kOk);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnknown);
  EXPECT_EQ(s.message(), "broken");
}

TEST(StatusOrTest, HoldsValue) {
  StatusOr<int> r = Half(8);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.status().ok());
  EXPECT_EQ(r.value(), 4);
  EXPECT_EQ(*r, 4);
}

TEST(StatusOrTest, HoldsError) {
  StatusOr<int> r = Half(7);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "7 is odd");
}

TEST(StatusOrTest, MoveOnlyValueAndArrow) {
  StatusOr<std::unique_ptr<std::string>> r = std::make_unique<std::string>("abc");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->get()->size(), 3u);
  std::unique_ptr<std::string> taken = std::move(r).value();
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(*taken, "abc");

  StatusOr<std::string> text = std::string("xyz");
  EXPECT_EQ(text->size(), 3u);
}

#ifndef NDEBUG
TEST(StatusOrDeathTest, OkStatusWithoutValueAsserts) {
  EXPECT_DEATH({ StatusOr<int> r = Status::Ok(); }, "ok Status");
}
#else
TEST(StatusOrTest, OkStatusWithoutValueIsAnError) {
  // Without assertions the mistake still cannot read as a value.
  StatusOr<int> r = Status::Ok();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnknown);
}
#endif

TEST(StatusTest, FromErrnoMessageAndCode) {
  Status s = Status::FromErrno(ENOENT, "open /no/such/file");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "open /no/such/file: No such file or directory");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);

  EXPECT_EQ(Status::FromErrno(EACCES, "perf_event_open").message(),
            "perf_event_open: Permission denied");
  EXPECT_EQ(Status::FromErrno(EACCES, "x").code(), StatusCode::kUnavailable);
  EXPECT_EQ(Status::FromErrno(EEXIST, "x").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(Status::FromErrno(EINVAL, "x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Status::FromErrno(EIO, "write out.txt").code(), StatusCode::kIo);
  EXPECT_EQ(Status::FromErrno(EIO, "write out.txt").message(), "write out.txt: Input/output error");
}

}  // namespace
}  // namespace inprof
