// Integer expressions used by workload specs: element counts, scalar values,
// launch dimensions and tuning constraints.
//
// Grammar (64-bit signed integer semantics), lowest precedence first; the
// precedence is Python's, so that the restrictions users bring from Python
// tuners mean what they meant there, and the C spellings of the logical
// operators are accepted beside the Python ones:
//   expr    := or
//   or      := and (('||' | 'or') and)*
//   and     := not (('&&' | 'and') not)*
//   not     := 'not' not | cmp
//   cmp     := bor (('=='|'!='|'<'|'<='|'>'|'>=') bor)*
//   bor     := bxor ('|' bxor)*
//   bxor    := band ('^' band)*
//   band    := shift ('&' shift)*
//   shift   := add (('<<'|'>>') add)*
//   add     := mul (('+'|'-') mul)*
//   mul     := unary (('*'|'/'|'//'|'%') unary)*
//   unary   := ('-'|'+'|'!'|'~') unary | power
//   power   := primary ('**' unary)?
//   primary := INTEGER | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')'
// Binary operators are left-associative but '**' (right). Comparisons chain as
// in Python: 'a < b <= c' is 'a < b and b <= c'. Where C differs: the bitwise
// operators bind tighter than comparisons ('x & 31 == 0' is '(x & 31) == 0'),
// 'not' binds looser than comparisons ('not a == b' is 'not (a == b)') while
// '!' is a unary operator as in C ('!a == b' is '(!a) == b').
// Functions: ceil_div(a,b), min(a,b,...), max(a,b,...), abs(a), pow2(a) (2^a),
//            log2(a) (floor), is_pow2(a), align_up(a,b).
// Comparisons and logic yield 0 or 1. '/' and '%' truncate toward zero like
// C; '//' rounds toward -infinity like Python's (so does '>>'); '**' needs an
// exponent >= 0; shifts need a count in 0..63. 'and', 'or', '&&' and '||'
// short-circuit. 'and', 'or' and 'not' are keywords, not names. INTEGER is
// decimal; NAME is [A-Za-z_][A-Za-z0-9_]*. ceil_div rounds toward +infinity
// for any signs; align_up(a,b) = ceil_div(a,b)*b needs b > 0; pow2 needs
// 0 <= a (a > 62 overflows); log2 needs a > 0.
//
// Errors throw kopt::SpecError with id "kopt.expr.NNN" and a message that
// quotes the expression and points at the offending token, e.g.
//   kopt.expr.003: unknown name 'Q' at column 10 in 'ceil_div(Q, 16)'
//   kopt.expr.004: division by zero at column 3 in 'N / BK'
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

namespace kopt::spec {

/// Values of the names an expression may use (case sizes and tuning parameters).
using Bindings = std::map<std::string, int64_t>;

/// A parsed expression. Cheap to copy (shared immutable tree).
class Expr {
 public:
  Expr() = default;
  /// Parses `text`. Throws SpecError("kopt.expr.001"/"002") on syntax errors
  /// (001: a bad token such as '@' or '1.5'; 002: tokens in a wrong order, an
  /// empty expression, nesting deeper than 200 or more than 4096 tokens), and
  /// "kopt.expr.006" for an unknown function or a wrong number of arguments,
  /// which are detected here rather than at evaluation.
  static Expr parse(const std::string& text);
  /// An expression that is the constant `value`.
  static Expr constant(int64_t value);

  /// Evaluates with the given bindings. Throws SpecError on unknown names
  /// (kopt.expr.003), division or modulo by zero (kopt.expr.004), overflow
  /// (kopt.expr.005) and bad function arity/arguments (kopt.expr.006).
  int64_t eval(const Bindings& vars) const;

  /// Every NAME the expression refers to (not function names).
  std::set<std::string> names() const;

  /// The expression as C++ over long long values, for generated code. An
  /// expression of C's operators alone (arithmetic, single comparisons,
  /// '&&', '||', '!', functions) means the same in C++ and is its text;
  /// one with Python's own ('and'/'or'/'not', bitwise operators, '//', '**',
  /// chained comparisons) is written with every operation parenthesised,
  /// 'and'/'or'/'not' as '&&'/'||'/'!', chains expanded, '//' as
  /// floor_div(a, b) and '**' as ipow(a, b) (the generated header defines
  /// those and the functions). "" for an empty expression.
  std::string cpp() const;

  /// The value if the whole expression is a single integer literal (as made by
  /// constant() or parse("16")); nullopt otherwise.
  std::optional<int64_t> as_constant() const;

  const std::string& text() const { return text_; }
  bool empty() const { return !root_; }

  struct Node;  // implementation detail (expr.cpp)

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

/// Expressions compare by their text (what the spec author wrote).
inline bool operator==(const Expr& a, const Expr& b) {
  return a.empty() == b.empty() && a.text() == b.text();
}
inline bool operator!=(const Expr& a, const Expr& b) { return !(a == b); }

}  // namespace kopt::spec
