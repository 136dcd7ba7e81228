// unit: rule expressions evaluate as the engines' conditions need.
#include <gtest/gtest.h>

#include "core/Expr.hpp"

namespace attnsim {
namespace {

const Expr::VariableCheck kAnyVariable = [](std::string_view) { return std::string{}; };

Value eval(const std::string& text, const Env& env = {}) { return Expr::parse(text, kAnyVariable).evaluate(env); }

TEST(Expr, ArithmeticAndPrecedence) {
  EXPECT_EQ(eval("1 + 2 * 3"), Value{std::int64_t{7}});
  EXPECT_EQ(eval("(1 + 2) * 3"), Value{std::int64_t{9}});
  EXPECT_EQ(eval("17 % 16"), Value{std::int64_t{1}});
  EXPECT_EQ(eval("-4 + 1"), Value{std::int64_t{-3}});
  EXPECT_EQ(eval("7 / 2"), Value{3.5});
}

TEST(Expr, ComparisonsMixIntegersAndReals) {
  const Env env{{"cc", 9.0}, {"cc_major", std::int64_t{9}}};
  EXPECT_TRUE(truthy(eval("cc >= 9.0 && cc_major == 9", env)));
  EXPECT_TRUE(truthy(eval("cc == 9", env)));
  EXPECT_FALSE(truthy(eval("cc < 8.0", env)));
}

TEST(Expr, NullComparisonsAreFalseAndCoalesce) {
  const Env env{{"spec_topk", Value{}}, {"page", std::int64_t{16}}};
  EXPECT_FALSE(truthy(eval("spec_topk > 1", env)));
  EXPECT_FALSE(truthy(eval("spec_topk <= 1", env)));
  EXPECT_TRUE(truthy(eval("spec_topk == null", env)));
  EXPECT_EQ(eval("spec_topk ?? 1", env), Value{std::int64_t{1}});
  EXPECT_EQ(eval("page ?? 1", env), Value{std::int64_t{16}});
  EXPECT_FALSE(truthy(eval("missing_variable", env)));
}

TEST(Expr, StringsListsAndConditionals) {
  const Env env{{"backend", std::string("fa3")}, {"page_size", std::int64_t{32}}};
  EXPECT_TRUE(truthy(eval("backend in ['flashinfer', 'fa3']", env)));
  EXPECT_TRUE(truthy(eval("page_size not in [16, 64]", env)));
  EXPECT_FALSE(truthy(eval("'trtllm_mha' in [backend, 'x']", env)));
  EXPECT_EQ(eval("page_size == 32 ? 'ok' : 'no'", env), Value{std::string("ok")});
  EXPECT_EQ(eval("false ? 1 : true ? 2 : 3", env), Value{std::int64_t{2}});
  EXPECT_TRUE(truthy(eval("!(backend == \"triton\")", env)));
}

TEST(Expr, WordOperatorsDoNotSwallowIdentifiers) {
  const Env env{{"index", std::int64_t{3}}, {"inx", std::int64_t{1}}};
  EXPECT_EQ(eval("index + inx", env), Value{std::int64_t{4}});
}

TEST(Expr, SyntaxErrorsNameTheOffset) {
  try {
    (void)Expr::parse("cc_major == ", kAnyVariable);
    FAIL() << "expected a syntax error";
  } catch (const ExprSyntaxError& e) {
    EXPECT_EQ(e.offset(), 12U);
  }
  EXPECT_THROW((void)Expr::parse("a in [1, 2", kAnyVariable), ExprSyntaxError);
  EXPECT_THROW((void)Expr::parse("'unterminated", kAnyVariable), ExprSyntaxError);
  EXPECT_THROW((void)Expr::parse("a b", kAnyVariable), ExprSyntaxError);
}

TEST(Expr, UnknownVariablesAreRejectedAtParseTime) {
  const Expr::VariableCheck only_cc = [](std::string_view name) {
    return name == "cc" ? std::string{} : "unknown variable '" + std::string(name) + "'";
  };
  EXPECT_NO_THROW((void)Expr::parse("cc > 8", only_cc));
  try {
    (void)Expr::parse("cc > 8 && ccmajor == 9", only_cc);
    FAIL() << "expected an unknown-variable error";
  } catch (const ExprSyntaxError& e) {
    EXPECT_EQ(e.offset(), 10U);
    EXPECT_STREQ(e.what(), "unknown variable 'ccmajor'");
  }
}

}  // namespace
}  // namespace attnsim
