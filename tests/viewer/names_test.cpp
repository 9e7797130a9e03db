// Function names shortened for the terminal the way pprof shows them (viewer/src/names.h).
#include "names.h"

#include <gtest/gtest.h>

namespace inprof::viewer {
namespace {

TEST(ShortFunctionName, DropsTemplateArgumentsParametersAndReturnType) {
  EXPECT_EQ(ShortFunctionName("std::vector<int, std::allocator<int> >::push_back(int const&)"),
            "std::vector::push_back");
  EXPECT_EQ(ShortFunctionName("void ns::Run<Foo, 3>(Foo&, std::function<void (int)>)"), "ns::Run");
  EXPECT_EQ(ShortFunctionName("std::__cxx11::basic_string<char, std::char_traits<char>, "
                              "std::allocator<char> >::_M_append(char const*, unsigned long)"),
            "std::__cxx11::basic_string::_M_append");
  EXPECT_EQ(ShortFunctionName("compute(int)"), "compute");
  EXPECT_EQ(ShortFunctionName("Foo::~Foo()"), "Foo::~Foo");
  EXPECT_EQ(ShortFunctionName("foo[abi:cxx11](int)"), "foo");
}

TEST(ShortFunctionName, KeepsQualifiersThatNameThings) {
  EXPECT_EQ(ShortFunctionName("void (anonymous namespace)::Run<Foo>(Foo&) const"),
            "(anonymous namespace)::Run");
  EXPECT_EQ(ShortFunctionName("main::{lambda(int)#1}::operator()(int) const"),
            "main::{lambda#1}::operator()");
  EXPECT_EQ(ShortFunctionName("(lambda at /src/app/main.cpp:55:12)::operator()() const"),
            "(lambda at /src/app/main.cpp:55:12)::operator()");
  EXPECT_EQ(ShortFunctionName("hot50(int) [clone .cold]"), "hot50 [clone .cold]");
  EXPECT_EQ(ShortFunctionName("Foo::operator->() &&"), "Foo::operator->");
}

TEST(ShortFunctionName, OperatorsKeepTheirSymbols) {
  EXPECT_EQ(ShortFunctionName("bool operator< <int>(Pair<int> const&, Pair<int> const&)"),
            "operator<");
  EXPECT_EQ(ShortFunctionName("std::ostream& std::operator<< <std::char_traits<char> >"
                              "(std::ostream&, char const*)"),
            "std::operator<<");
  EXPECT_EQ(ShortFunctionName("operator/(Ratio, Ratio)"), "operator/");
  EXPECT_EQ(ShortFunctionName("operator new(unsigned long)"), "operator new");
  EXPECT_EQ(ShortFunctionName("Foo::operator unsigned long() const"),
            "Foo::operator unsigned long");
  EXPECT_EQ(ShortFunctionName("Matrix::operator[](int)"), "Matrix::operator[]");
}

TEST(ShortFunctionName, OtherNamesAreLeftAlone) {
  for (const char* name : {"main", "__libc_start_main", "(main chunk)", "libc.so.6+0x1234",
                           "[unknown]", "[truncated]", "sort+0x77b8", "compute /app/x.lua:12",
                           "weird\nname\t ", "parse;tokenize", "unbalanced(int", ""}) {
    EXPECT_EQ(ShortFunctionName(name), name);
  }
}

TEST(DisplayName, FullNamesOnRequest) {
  EXPECT_EQ(DisplayName("f(int)", true), "f(int)");
  EXPECT_EQ(DisplayName("f(int)", false), "f");
}

}  // namespace
}  // namespace inprof::viewer
