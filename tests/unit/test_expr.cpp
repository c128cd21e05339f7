// Integer expressions (spec/expr.h): grammar, semantics, errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "spec/expr.h"
#include "support/expect_error.h"
#include "util/error.h"

namespace kopt::spec {
namespace {

using kopt::test::expect_error;

int64_t ev(const std::string& text, const Bindings& vars = {}) { return Expr::parse(text).eval(vars); }

void expect_parse_error(const std::string& text, const std::string& id,
                        const std::vector<std::string>& needles) {
  expect_error([&] { Expr::parse(text); }, id, needles);
}
void expect_eval_error(const std::string& text, const Bindings& vars, const std::string& id,
                       const std::vector<std::string>& needles) {
  const Expr e = Expr::parse(text);  // must parse
  expect_error([&] { e.eval(vars); }, id, needles);
}

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(Expr, Literals) {
  EXPECT_EQ(ev("0"), 0);
  EXPECT_EQ(ev("42"), 42);
  EXPECT_EQ(ev("  7 "), 7);
  EXPECT_EQ(ev("9223372036854775807"), kMax);
}

TEST(Expr, PrecedenceAndAssociativity) {
  EXPECT_EQ(ev("1+2*3"), 7);
  EXPECT_EQ(ev("(1+2)*3"), 9);
  EXPECT_EQ(ev("10-3-2"), 5);      // left-associative
  EXPECT_EQ(ev("100/10/5"), 2);    // left-associative
  EXPECT_EQ(ev("2*3%4"), 2);       // (2*3)%4
  EXPECT_EQ(ev("7%4*3"), 9);       // (7%4)*3
  EXPECT_EQ(ev("1+2<4"), 1);       // additive above comparison
  EXPECT_EQ(ev("1<2==2"), 1);      // chained as in Python: 1<2 and 2==2
  EXPECT_EQ(ev("3>2>1"), 1);       // 3>2 and 2>1 (C would say (3>2)>1, 0)
  EXPECT_EQ(ev("1||0&&0"), 1);     // && binds tighter than ||
  EXPECT_EQ(ev("(1||0)&&0"), 0);
  EXPECT_EQ(ev("!0+1"), 2);        // unary binds tightest
  EXPECT_EQ(ev("-2*3"), -6);
  EXPECT_EQ(ev("2*-3"), -6);
  EXPECT_EQ(ev("- -3"), 3);
  EXPECT_EQ(ev("+5"), 5);
  EXPECT_EQ(ev("!!7"), 1);
  EXPECT_EQ(ev("2 <= 2"), 1);
  EXPECT_EQ(ev("2 >= 3"), 0);
  EXPECT_EQ(ev("2 != 3"), 1);
  EXPECT_EQ(ev("(BM/TM)*(BN/TN)", {{"BM", 64}, {"TM", 4}, {"BN", 128}, {"TN", 8}}), 256);
  EXPECT_EQ(ev("BM*BK*4 <= 49152", {{"BM", 128}, {"BK", 96}}), 1);
  EXPECT_EQ(ev("BM*BK*4 <= 49152", {{"BM", 128}, {"BK", 97}}), 0);
}

TEST(Expr, PythonOperatorsAndPrecedence) {
  // and / or / not, as Kernel Tuner's restrictions write them.
  EXPECT_EQ(ev("1 and 0 or 1"), 1);
  EXPECT_EQ(ev("1 or 0 and 0"), 1);  // and binds tighter than or
  EXPECT_EQ(ev("not 0"), 1);
  EXPECT_EQ(ev("not 2 == 3"), 1);    // not (2 == 3): below comparisons, as in Python
  EXPECT_EQ(ev("!2 == 3"), 0);       // (!2) == 3: '!' is C's unary operator
  EXPECT_EQ(ev("not not 5"), 1);
  EXPECT_EQ(ev("0 and 1/0"), 0);     // short-circuits
  EXPECT_EQ(ev("1 or 1/0"), 1);
  EXPECT_EQ(ev("x % 32 == 0 and x <= 1024", {{"x", 64}}), 1);
  // Bitwise operators bind tighter than comparisons (Python; C's '==' would bind first).
  EXPECT_EQ(ev("x & 31 == 0", {{"x", 64}}), 1);
  EXPECT_EQ(ev("x & 31 == 0", {{"x", 65}}), 0);
  EXPECT_EQ(ev("6 & 3"), 2);
  EXPECT_EQ(ev("6 | 3"), 7);
  EXPECT_EQ(ev("6 ^ 3"), 5);
  EXPECT_EQ(ev("~0"), -1);
  EXPECT_EQ(ev("1 << 10"), 1024);
  EXPECT_EQ(ev("1024 >> 3"), 128);
  EXPECT_EQ(ev("-9 >> 1"), -5);      // arithmetic shift, like Python
  EXPECT_EQ(ev("1 | 2 ^ 3 & 4"), 3);  // & above ^ above |: 1 | (2 ^ (3 & 4))
  EXPECT_EQ(ev("1 << 2 + 1"), 8);    // + above <<
  EXPECT_EQ(ev("2 + 3 & 4"), 4);     // (2 + 3) & 4
  // Floor division and power.
  EXPECT_EQ(ev("7 // 2"), 3);
  EXPECT_EQ(ev("-7 // 2"), -4);      // toward -infinity; '/' truncates (-3)
  EXPECT_EQ(ev("7 // -2"), -4);
  EXPECT_EQ(ev("-8 // 2"), -4);
  EXPECT_EQ(ev("2 ** 10"), 1024);
  EXPECT_EQ(ev("2 ** 3 ** 2"), 512);  // right-associative
  EXPECT_EQ(ev("-2 ** 2"), -4);      // ** above unary minus on its left
  EXPECT_EQ(ev("2 ** -0"), 1);
  EXPECT_EQ(ev("(-1) ** 5"), -1);
  EXPECT_EQ(ev("(-1) ** 1000000000000"), 1);
  EXPECT_EQ(ev("0 ** 0"), 1);
  EXPECT_EQ(ev("2 * 3 // 4"), 1);    // same level as *, left to right
  // Chained comparisons.
  EXPECT_EQ(ev("32 <= x * y <= 1024", {{"x", 16}, {"y", 8}}), 1);
  EXPECT_EQ(ev("32 <= x * y <= 1024", {{"x", 64}, {"y", 32}}), 0);
  EXPECT_EQ(ev("1 < 2 < 3 < 2"), 0);
  EXPECT_EQ(ev("3 > 1 == 1"), 1);
  EXPECT_EQ(Expr::parse("a < b < c").names(), (std::set<std::string>{"a", "b", "c"}));
}

TEST(Expr, CppFormMeansWhatTheEvaluatorComputes) {
  EXPECT_EQ(Expr::parse("ceil_div(N, BM)").cpp(), "ceil_div(N, BM)");
  EXPECT_EQ(Expr::parse("x & 31 == 0 and not y").cpp(), "(((x & 31) == 0) && (!y))");
  EXPECT_EQ(Expr::parse("a < b <= c").cpp(), "((a < b) && (b <= c))");
  EXPECT_EQ(Expr::parse("N // 2 + 2 ** K").cpp(), "(floor_div(N, 2) + ipow(2, K))");
  EXPECT_EQ(Expr::parse("x // 5000000000 - -y").cpp(), "(floor_div(x, 5000000000LL) - (-y))");
  EXPECT_EQ(Expr::parse("a or b").cpp(), "(a || b)");
  EXPECT_EQ(Expr::parse("~a").cpp(), "(~a)");
  // C's operators alone: the text, as written (it means the same in C++).
  EXPECT_EQ(Expr::parse("-M * 4096").cpp(), "-M * 4096");
  EXPECT_EQ(Expr::parse("(KIND == 0) * BM + !x && y < 3 || z").cpp(), "(KIND == 0) * BM + !x && y < 3 || z");
  EXPECT_EQ(Expr::parse("min(1, 2, N)").cpp(), "min(1, 2, N)");
  EXPECT_EQ(Expr().cpp(), "");
}

TEST(Expr, DivisionTruncatesTowardZeroLikeC) {
  EXPECT_EQ(ev("7/2"), 3);
  EXPECT_EQ(ev("-7/2"), -3);
  EXPECT_EQ(ev("7/-2"), -3);
  EXPECT_EQ(ev("-7%2"), -1);
  EXPECT_EQ(ev("7%-2"), 1);
}

TEST(Expr, LogicShortCircuits) {
  EXPECT_EQ(ev("0 && 1/0"), 0);
  EXPECT_EQ(ev("1 || 1/0"), 1);
  EXPECT_EQ(ev("K != 0 && N / K > 2", {{"K", 0}, {"N", 5}}), 0);
  EXPECT_EQ(ev("2 && 3"), 1);  // yields 0 or 1
}

TEST(Expr, Functions) {
  EXPECT_EQ(ev("ceil_div(N, 16)", {{"N", 17}}), 2);
  EXPECT_EQ(ev("ceil_div(N, 16)", {{"N", 16}}), 1);
  EXPECT_EQ(ev("ceil_div(N, 16)", {{"N", 1}}), 1);
  EXPECT_EQ(ev("ceil_div(-7, 2)"), -3);
  EXPECT_EQ(ev("ceil_div(7, -2)"), -3);
  EXPECT_EQ(ev("ceil_div(-7, -2)"), 4);
  EXPECT_EQ(ev("min(3, 1, 2)"), 1);
  EXPECT_EQ(ev("max(3, 9, 2)"), 9);
  EXPECT_EQ(ev("min(4)"), 4);
  EXPECT_EQ(ev("abs(-5)"), 5);
  EXPECT_EQ(ev("abs(5)"), 5);
  EXPECT_EQ(ev("pow2(0)"), 1);
  EXPECT_EQ(ev("pow2(10)"), 1024);
  EXPECT_EQ(ev("pow2(62)"), int64_t{1} << 62);
  EXPECT_EQ(ev("log2(1)"), 0);
  EXPECT_EQ(ev("log2(1023)"), 9);
  EXPECT_EQ(ev("log2(1024)"), 10);
  EXPECT_EQ(ev("is_pow2(64)"), 1);
  EXPECT_EQ(ev("is_pow2(96)"), 0);
  EXPECT_EQ(ev("is_pow2(0)"), 0);
  EXPECT_EQ(ev("is_pow2(-4)"), 0);
  EXPECT_EQ(ev("align_up(17, 16)"), 32);
  EXPECT_EQ(ev("align_up(32, 16)"), 32);
  EXPECT_EQ(ev("align_up(0, 16)"), 0);
  EXPECT_EQ(ev("max(min(8, N), ceil_div(N, 4)) * 2", {{"N", 100}}), 50);
}

TEST(Expr, NamesAreCollectedWithoutFunctionNames) {
  const Expr e = Expr::parse("ceil_div(N, BN) * min(M, BN) + K");
  EXPECT_EQ(e.names(), (std::set<std::string>{"BN", "K", "M", "N"}));
  // A name spelled like a function but used without '(' is a plain name.
  EXPECT_EQ(Expr::parse("min + 1").names(), std::set<std::string>{"min"});
  EXPECT_EQ(ev("min + 1", {{"min", 2}}), 3);
  EXPECT_TRUE(Expr::parse("3*4").names().empty());
}

TEST(Expr, TextConstantAndEquality) {
  const Expr e = Expr::parse("M * K");
  EXPECT_EQ(e.text(), "M * K");
  EXPECT_FALSE(e.empty());
  EXPECT_FALSE(e.as_constant().has_value());
  const Expr c = Expr::constant(-12);
  EXPECT_EQ(c.text(), "-12");
  EXPECT_EQ(c.eval({}), -12);
  EXPECT_EQ(c.as_constant(), std::optional<int64_t>(-12));
  EXPECT_EQ(Expr::parse("16").as_constant(), std::optional<int64_t>(16));
  EXPECT_EQ(Expr::parse("16"), Expr::constant(16));
  EXPECT_NE(Expr::parse("M*K"), Expr::parse("M * K"));  // compares as written
  EXPECT_TRUE(Expr().empty());
  EXPECT_EQ(Expr(), Expr());
  EXPECT_TRUE(Expr().names().empty());
}

TEST(Expr, CopiesShareTheTree) {
  Expr a = Expr::parse("N + 1");
  Expr b = a;
  a = Expr::parse("N + 2");
  EXPECT_EQ(b.eval({{"N", 1}}), 2);
  EXPECT_EQ(a.eval({{"N", 1}}), 3);
}

// --- errors -----------------------------------------------------------------

TEST(ExprErrors, UnexpectedCharacter001) {
  expect_parse_error("1 @ 2", "kopt.expr.001", {"unexpected character '@'", "column 3", "'1 @ 2'"});
  expect_parse_error("N $", "kopt.expr.001", {"'$'", "column 3"});
  expect_parse_error("a = b", "kopt.expr.001", {"'='", "column 3"});  // single '=' is not '=='
}

TEST(ExprErrors, FloatingAndHugeLiterals001) {
  expect_parse_error("N * 1.5", "kopt.expr.001", {"floating-point literal '1.5'", "column 5"});
  expect_parse_error("99999999999999999999", "kopt.expr.001", {"does not fit in 64 bits"});
  expect_parse_error("12ab", "kopt.expr.001", {"malformed number '12ab'"});
}

TEST(ExprErrors, Syntax002) {
  expect_parse_error("", "kopt.expr.002", {"empty expression"});
  expect_parse_error("   ", "kopt.expr.002", {"empty expression"});
  expect_parse_error("(1 + 2", "kopt.expr.002", {"expected ')'", "found end of expression", "column 7"});
  expect_parse_error("1 +", "kopt.expr.002", {"expected a number, a name or '('", "column 4"});
  expect_parse_error("3 4", "kopt.expr.002", {"found '4'", "column 3", "'3 4'"});
  expect_parse_error("1)", "kopt.expr.002", {"found ')'", "column 2"});
  expect_parse_error("min(1,)", "kopt.expr.002", {"found ')'", "column 7"});
  expect_parse_error("min(1 2)", "kopt.expr.002", {"',' or ')'", "'min'"});
  expect_parse_error("* 2", "kopt.expr.002", {"found '*'", "column 1"});
}

TEST(ExprErrors, NewOperators) {
  expect_eval_error("1 << 64", {}, "kopt.expr.006", {"shift count in 0..63", "'<<'"});
  expect_eval_error("1 >> -1", {}, "kopt.expr.006", {"shift count"});
  expect_eval_error("1 << 63", {}, "kopt.expr.005", {"overflow in '<<'"});
  EXPECT_EQ(ev("-1 << 63"), kMin);
  EXPECT_EQ(ev("-1 << 62"), kMin / 2);
  expect_eval_error("2 ** 63", {}, "kopt.expr.005", {"overflow in '**'"});
  expect_eval_error("2 ** -1", {}, "kopt.expr.006", {"exponent >= 0"});
  expect_eval_error("N // 0", {{"N", 3}}, "kopt.expr.004", {"division by zero", "column 3"});
  expect_parse_error("a and", "kopt.expr.002", {"found end of expression"});
  expect_parse_error("and + 1", "kopt.expr.002", {"found 'and'", "column 1"});  // a keyword, not a name
  expect_parse_error("a not b", "kopt.expr.002", {"found 'not'"});
}

TEST(ExprErrors, NestingAndLengthAreBounded002) {
  expect_parse_error(std::string(1000, '(') + "1" + std::string(1000, ')'), "kopt.expr.002",
                     {"nested more than 200"});
  expect_parse_error(std::string(1000, '-') + "1", "kopt.expr.002", {"nested more than 200"});
  std::string chain = "1";
  for (int i = 0; i < 5000; ++i) chain += "+1";
  expect_parse_error(chain, "kopt.expr.002", {"too long"});
  // Moderate nesting is fine.
  EXPECT_EQ(ev(std::string(100, '(') + "1" + std::string(100, ')')), 1);
}

TEST(ExprErrors, UnknownName003) {
  expect_eval_error("ceil_div(Q, 16)", {{"N", 1}}, "kopt.expr.003", {});
  try {
    Expr::parse("ceil_div(Q, 16)").eval({{"N", 1}});
    FAIL() << "no error";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(), "[kopt.expr.003] unknown name 'Q' at column 10 in 'ceil_div(Q, 16)'");
  }
}

TEST(ExprErrors, DivisionByZero004) {
  try {
    Expr::parse("N / BK").eval({{"N", 4}, {"BK", 0}});
    FAIL() << "no error";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.id(), "kopt.expr.004");
    EXPECT_STREQ(e.what(), "[kopt.expr.004] division by zero at column 3 in 'N / BK'");
  }
  expect_eval_error("N % BK", {{"N", 4}, {"BK", 0}}, "kopt.expr.004", {"column 3"});
  expect_eval_error("ceil_div(N, 0)", {{"N", 4}}, "kopt.expr.004", {"column 1"});
  expect_eval_error("align_up(N, 0)", {{"N", 4}}, "kopt.expr.004", {});
}

TEST(ExprErrors, Overflow005) {
  expect_eval_error("9223372036854775807 + 1", {}, "kopt.expr.005", {"overflow", "'+'", "column 21"});
  expect_eval_error("-9223372036854775807 - 2", {}, "kopt.expr.005", {"'-'"});
  expect_eval_error("4611686018427387904 * 2", {}, "kopt.expr.005", {"'*'"});
  expect_eval_error("M*N*K*L", {{"M", 1 << 20}, {"N", 1 << 20}, {"K", 1 << 20}, {"L", 1 << 10}},
                    "kopt.expr.005", {"column 6"});
  expect_eval_error("X / -1", {{"X", kMin}}, "kopt.expr.005", {"'/'"});
  expect_eval_error("X % -1", {{"X", kMin}}, "kopt.expr.005", {"'%'"});
  expect_eval_error("-X", {{"X", kMin}}, "kopt.expr.005", {});
  expect_eval_error("abs(X)", {{"X", kMin}}, "kopt.expr.005", {"'abs'"});
  expect_eval_error("pow2(63)", {}, "kopt.expr.005", {"'pow2'"});
  expect_eval_error("align_up(X, 16)", {{"X", kMax}}, "kopt.expr.005", {"'align_up'"});
  expect_eval_error("ceil_div(X, -1)", {{"X", kMin}}, "kopt.expr.005", {});
}

TEST(ExprErrors, Functions006) {
  expect_parse_error("foo(1)", "kopt.expr.006", {"unknown function 'foo'", "ceil_div", "column 1"});
  expect_parse_error("2 * abs(1, 2)", "kopt.expr.006", {"'abs' takes 1 argument, got 2", "column 5"});
  expect_parse_error("ceil_div(1)", "kopt.expr.006", {"takes 2 arguments, got 1"});
  expect_parse_error("min()", "kopt.expr.006", {"at least 1 argument, got 0"});
  expect_eval_error("log2(N)", {{"N", 0}}, "kopt.expr.006", {"'log2'", "> 0", "got 0"});
  expect_eval_error("pow2(-1)", {}, "kopt.expr.006", {"'pow2'", ">= 0"});
  expect_eval_error("align_up(5, -2)", {}, "kopt.expr.006", {"'align_up'", "alignment"});
}

TEST(ExprErrors, EmptyExprCannotBeEvaluated) {
  expect_error([] { Expr().eval({}); }, "kopt.expr.002", {"empty"});
}

}  // namespace
}  // namespace kopt::spec
