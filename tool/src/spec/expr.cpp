// Integer expression parser and evaluator (grammar in expr.h).
//
// Parsing builds an immutable tree; every node remembers the 1-based column of
// the token that produced it, so that evaluation errors (unknown name,
// division by zero, overflow) can point at the offending token.
#include "spec/expr.h"

#include <cctype>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

#include "util/error.h"

namespace kopt::spec {

namespace {

// ---------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------

enum class Tok { integer, name, op, lparen, rparen, comma, end };

struct Token {
  Tok kind = Tok::end;
  std::string text;   // spelling (for messages)
  int64_t value = 0;  // Tok::integer
  int column = 0;     // 1-based column of the first character
};

/// "'<text>'" quoting used in every message.
std::string quoted(const std::string& s) { return "'" + s + "'"; }

/// The expression as messages show it: at most 120 characters.
std::string shown_expr(const std::string& expr) {
  return expr.size() <= 120 ? quoted(expr) : quoted(expr.substr(0, 117) + "...");
}

[[noreturn]] void fail(const char* id, const std::string& what, int column,
                       const std::string& expr) {
  throw SpecError(id, what + " at column " + std::to_string(column) + " in " + shown_expr(expr));
}

/// Longer texts are refused before they are split into tokens (memory).
constexpr size_t kMaxTextLength = 64 * 1024;

/// Two-character operators first so that "<=" is not read as "<" "=", nor
/// "//" as "/" "/".
const char* const kOperators[] = {"||", "&&", "==", "!=", "<=", ">=", "<<", ">>", "//", "**", "<", ">",
                                  "+",  "-",  "*",  "/",  "%",  "!",  "&",  "|",  "^",  "~"};

/// Python's logical keywords, read as operators (they cannot be names).
bool is_keyword_operator(const std::string& name) { return name == "and" || name == "or" || name == "not"; }

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// Reads a decimal integer literal starting at `pos`. Rejects floating-point
/// literals and values that do not fit in int64 (kopt.expr.001).
Token lex_integer(const std::string& s, size_t& pos) {
  Token t{Tok::integer, "", 0, static_cast<int>(pos) + 1};
  size_t end = pos;
  while (end < s.size() && is_name_char(s[end])) ++end;
  bool is_float = end < s.size() && s[end] == '.';
  if (is_float) {
    ++end;
    while (end < s.size() && (is_name_char(s[end]) || s[end] == '.')) ++end;
  }
  t.text = s.substr(pos, end - pos);
  if (is_float) {
    fail("kopt.expr.001",
         "floating-point literal " + shown_expr(t.text) + " (expressions are integer-only)",
         t.column, s);
  }
  int64_t v = 0;
  for (char c : t.text) {
    if (!is_digit(c)) fail("kopt.expr.001", "malformed number " + shown_expr(t.text), t.column, s);
    if (__builtin_mul_overflow(v, int64_t{10}, &v) ||
        __builtin_add_overflow(v, int64_t{c - '0'}, &v)) {
      fail("kopt.expr.001", "integer literal " + shown_expr(t.text) + " does not fit in 64 bits",
           t.column, s);
    }
  }
  t.value = v;
  pos = end;
  return t;
}

/// Splits `s` into tokens; the last one is Tok::end (column one past the end).
std::vector<Token> tokenize(const std::string& s) {
  if (s.size() > kMaxTextLength) {
    throw SpecError("kopt.expr.002", "expression too long (" + std::to_string(s.size()) +
                                         " characters, at most " + std::to_string(kMaxTextLength) +
                                         "): " + shown_expr(s));
  }
  std::vector<Token> out;
  size_t pos = 0;
  while (pos < s.size()) {
    const char c = s[pos];
    const int column = static_cast<int>(pos) + 1;
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++pos;
    } else if (is_digit(c)) {
      out.push_back(lex_integer(s, pos));
    } else if (is_name_start(c)) {
      size_t end = pos;
      while (end < s.size() && is_name_char(s[end])) ++end;
      const std::string word = s.substr(pos, end - pos);
      out.push_back({is_keyword_operator(word) ? Tok::op : Tok::name, word, 0, column});
      pos = end;
    } else if (c == '(' || c == ')' || c == ',') {
      out.push_back({c == '(' ? Tok::lparen : c == ')' ? Tok::rparen : Tok::comma,
                     std::string(1, c), 0, column});
      ++pos;
    } else {
      bool matched = false;
      for (const char* op : kOperators) {
        const size_t n = std::char_traits<char>::length(op);
        if (s.compare(pos, n, op) == 0) {
          out.push_back({Tok::op, op, 0, column});
          pos += n;
          matched = true;
          break;
        }
      }
      if (!matched) {
        if (c == '=') fail("kopt.expr.001", "unexpected character '=' (a comparison is '==')", column, s);
        std::string shown(1, c);
        if (!std::isprint(static_cast<unsigned char>(c))) {
          const char* hex = "0123456789abcdef";
          const auto u = static_cast<unsigned char>(c);
          shown = std::string("\\x") + hex[u >> 4] + hex[u & 15];
        }
        fail("kopt.expr.001", "unexpected character " + quoted(shown), column, s);
      }
    }
  }
  out.push_back({Tok::end, "end of expression", 0, static_cast<int>(s.size()) + 1});
  return out;
}

// ---------------------------------------------------------------------------
// Functions
// ---------------------------------------------------------------------------

enum class Fn { ceil_div, min, max, abs, pow2, log2, is_pow2, align_up };

struct FnInfo {
  const char* name;
  Fn fn;
  int min_args;
  int max_args;  // -1: unbounded
};

const FnInfo kFunctions[] = {
    {"ceil_div", Fn::ceil_div, 2, 2}, {"min", Fn::min, 1, -1},   {"max", Fn::max, 1, -1},
    {"abs", Fn::abs, 1, 1},           {"pow2", Fn::pow2, 1, 1},  {"log2", Fn::log2, 1, 1},
    {"is_pow2", Fn::is_pow2, 1, 1},   {"align_up", Fn::align_up, 2, 2},
};

const FnInfo* find_function(const std::string& name) {
  for (const FnInfo& f : kFunctions) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

std::string function_list() {
  std::string out;
  for (const FnInfo& f : kFunctions) out += (out.empty() ? "" : ", ") + std::string(f.name);
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------
// Tree
// ---------------------------------------------------------------------------

struct Expr::Node {
  enum class Kind { integer, name, unary, binary, call };
  Kind kind = Kind::integer;
  int64_t value = 0;   // integer
  std::string text;    // name, operator or function spelling
  const FnInfo* fn = nullptr;
  int column = 0;      // of the token (operator, name, literal, function name)
  /// Python's alone: an operator C lacks or reads otherwise ('//', '**',
  /// bitwise ones, 'and'/'or'/'not', a chained comparison). Expr::cpp writes
  /// an expression with one in C++'s terms; one without is C++ as written.
  bool python = false;
  std::vector<std::shared_ptr<const Node>> kids;
};

namespace {

using NodePtr = std::shared_ptr<const Expr::Node>;
using Node = Expr::Node;

/// Recursive-descent parser; one method per grammar rule of expr.h.
class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text), toks_(tokenize(text)) {
    if (toks_.size() > kMaxTokens) {
      throw SpecError("kopt.expr.002", "expression too long (more than " +
                                           std::to_string(kMaxTokens) + " tokens): " +
                                           quoted(text_.substr(0, 60) + "..."));
    }
  }

  NodePtr parse_all() {
    if (peek().kind == Tok::end) {
      throw SpecError("kopt.expr.002", "empty expression " + shown_expr(text_));
    }
    NodePtr root = parse_or();
    if (peek().kind != Tok::end) unexpected("an operator or the end of the expression");
    return root;
  }

 private:
  /// Deep nesting ("((((...") would otherwise exhaust the stack.
  static constexpr int kMaxDepth = 200;
  /// Bounds the depth of left-associative chains ("1+1+1+..."), which the
  /// evaluator walks recursively.
  static constexpr size_t kMaxTokens = 4096;

  const Token& peek() const { return toks_[pos_]; }
  const Token& take() { return toks_[pos_++]; }
  bool at_op(const char* op) const { return peek().kind == Tok::op && peek().text == op; }

  [[noreturn]] void unexpected(const std::string& expected) const {
    const Token& t = peek();
    const std::string found = t.kind == Tok::end ? "end of expression" : shown_expr(t.text);
    fail("kopt.expr.002", "expected " + expected + ", found " + found, t.column, text_);
  }

  /// A binary node; `spelling` replaces the token's text (the keyword
  /// operators are stored as the C operators they mean: "and" as "&&").
  static NodePtr make_binary(const Token& op, NodePtr lhs, NodePtr rhs, const std::string& spelling = "") {
    auto n = std::make_shared<Node>();
    n->kind = Node::Kind::binary;
    n->text = spelling.empty() ? op.text : spelling;
    n->column = op.column;
    n->python = n->text != op.text || is_python_operator(op.text);
    n->kids = {std::move(lhs), std::move(rhs)};
    return n;
  }
  static bool is_python_operator(const std::string& op) {
    for (const char* p : {"//", "**", "&", "|", "^", "<<", ">>", "~", "and", "or", "not"})
      if (op == p) return true;
    return false;
  }

  /// The operator among `ops` at the current token, or nullptr.
  const char* matching(std::initializer_list<const char*> ops) const {
    for (const char* op : ops)
      if (at_op(op)) return op;
    return nullptr;
  }

  /// Parses `next (op next)*` for the operators in `ops`, left-associative.
  /// "and" and "or" are stored as "&&" and "||".
  template <typename Next>
  NodePtr parse_left_assoc(std::initializer_list<const char*> ops, Next next) {
    NodePtr lhs = (this->*next)();
    while (matching(ops)) {
      const Token op = take();
      const std::string spelling = op.text == "and" ? "&&" : op.text == "or" ? "||" : op.text;
      lhs = make_binary(op, lhs, (this->*next)(), spelling);
    }
    return lhs;
  }

  NodePtr parse_or() { return parse_left_assoc({"||", "or"}, &Parser::parse_and); }
  NodePtr parse_and() { return parse_left_assoc({"&&", "and"}, &Parser::parse_not); }
  /// Python's "not": below the comparisons ("not a == b" is "not (a == b)").
  NodePtr parse_not() {
    if (!at_op("not")) return parse_cmp();
    const Token op = take();
    DepthGuard guard(this, op);
    return make_unary(op, parse_not(), "!");
  }
  /// Comparisons chain as in Python: "a < b <= c" is "a < b and b <= c"
  /// (b evaluated once: the subtree is shared).
  NodePtr parse_cmp() {
    static const std::initializer_list<const char*> kCmp = {"==", "!=", "<", "<=", ">", ">="};
    NodePtr first = parse_bor();
    if (!matching(kCmp)) return first;
    NodePtr lhs = first, chain;
    while (matching(kCmp)) {
      const Token op = take();
      NodePtr rhs = parse_bor();
      NodePtr link = make_binary(op, lhs, rhs);
      chain = chain ? make_binary(op, chain, link, "&&") : link;  // "&&" differs from the token: Python's
      lhs = rhs;
    }
    return chain;
  }
  NodePtr parse_bor() { return parse_left_assoc({"|"}, &Parser::parse_bxor); }
  NodePtr parse_bxor() { return parse_left_assoc({"^"}, &Parser::parse_band); }
  NodePtr parse_band() { return parse_left_assoc({"&"}, &Parser::parse_shift); }
  NodePtr parse_shift() { return parse_left_assoc({"<<", ">>"}, &Parser::parse_add); }
  NodePtr parse_add() { return parse_left_assoc({"+", "-"}, &Parser::parse_mul); }
  NodePtr parse_mul() { return parse_left_assoc({"*", "/", "//", "%"}, &Parser::parse_unary); }

  static NodePtr make_unary(const Token& op, NodePtr operand, const std::string& spelling = "") {
    auto n = std::make_shared<Node>();
    n->kind = Node::Kind::unary;
    n->text = spelling.empty() ? op.text : spelling;
    n->column = op.column;
    n->python = n->text != op.text || is_python_operator(op.text);
    n->kids = {std::move(operand)};
    return n;
  }

  NodePtr parse_unary() {
    if (at_op("-") || at_op("!") || at_op("+") || at_op("~")) {
      const Token op = take();
      DepthGuard guard(this, op);
      return make_unary(op, parse_unary());
    }
    return parse_power();
  }

  /// primary ['**' unary]: right-associative, above the unary operators on
  /// its left ("-2**2" is -4) as in Python.
  NodePtr parse_power() {
    NodePtr base = parse_primary();
    if (!at_op("**")) return base;
    const Token op = take();
    DepthGuard guard(this, op);
    return make_binary(op, base, parse_unary());
  }

  NodePtr parse_primary() {
    const Token& t = peek();
    if (t.kind == Tok::integer) {
      auto n = std::make_shared<Node>();
      n->kind = Node::Kind::integer;
      n->value = t.value;
      n->text = t.text;
      n->column = t.column;
      take();
      return n;
    }
    if (t.kind == Tok::name) {
      const Token name = take();
      if (peek().kind == Tok::lparen) return parse_call(name);
      auto n = std::make_shared<Node>();
      n->kind = Node::Kind::name;
      n->text = name.text;
      n->column = name.column;
      return n;
    }
    if (t.kind == Tok::lparen) {
      const Token open = take();
      DepthGuard guard(this, open);
      NodePtr inner = parse_or();
      if (peek().kind != Tok::rparen) unexpected("')' to close '(' at column " +
                                                 std::to_string(open.column));
      take();
      return inner;
    }
    unexpected("a number, a name or '('");
  }

  /// NAME '(' expr (',' expr)* ')'. Unknown functions and wrong argument
  /// counts are reported here, at parse time (kopt.expr.006).
  NodePtr parse_call(const Token& name) {
    const FnInfo* fn = find_function(name.text);
    if (!fn) {
      fail("kopt.expr.006",
           "unknown function " + shown_expr(name.text) + " (known: " + function_list() + ")",
           name.column, text_);
    }
    const Token open = take();  // '('
    DepthGuard guard(this, open);
    auto n = std::make_shared<Node>();
    n->kind = Node::Kind::call;
    n->text = name.text;
    n->fn = fn;
    n->column = name.column;
    if (peek().kind == Tok::rparen) {
      take();
    } else {
      for (;;) {
        n->kids.push_back(parse_or());
        if (peek().kind == Tok::comma) {
          take();
          continue;
        }
        if (peek().kind != Tok::rparen) unexpected("',' or ')' in the arguments of " +
                                                   shown_expr(name.text));
        take();
        break;
      }
    }
    check_arity(*n, name);
    return n;
  }

  void check_arity(const Node& n, const Token& name) const {
    const int got = static_cast<int>(n.kids.size());
    const FnInfo& f = *n.fn;
    if (got >= f.min_args && (f.max_args < 0 || got <= f.max_args)) return;
    const std::string expected = f.max_args < 0 ? "at least " + std::to_string(f.min_args)
                                                : std::to_string(f.min_args);
    fail("kopt.expr.006",
         shown_expr(name.text) + " takes " + expected + " argument" + (f.min_args == 1 ? "" : "s") +
             ", got " + std::to_string(got),
         name.column, text_);
  }

  /// Counts nesting of parentheses, calls and unary operators.
  struct DepthGuard {
    DepthGuard(Parser* p, const Token& at) : p_(p) {
      if (++p_->depth_ > kMaxDepth) {
        fail("kopt.expr.002",
             "expression nested more than " + std::to_string(kMaxDepth) + " levels deep",
             at.column, p_->text_);
      }
    }
    ~DepthGuard() { --p_->depth_; }
    Parser* p_;
  };

  const std::string& text_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
};

// ---------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------

class Evaluator {
 public:
  Evaluator(const std::string& text, const Bindings& vars) : text_(text), vars_(vars) {}

  int64_t eval(const Node& n) const {
    switch (n.kind) {
      case Node::Kind::integer: return n.value;
      case Node::Kind::name: return lookup(n);
      case Node::Kind::unary: return unary(n);
      case Node::Kind::binary: return binary(n);
      case Node::Kind::call: return call(n);
    }
    return 0;  // unreachable
  }

 private:
  [[noreturn]] void overflow(const Node& at) const {
    fail("kopt.expr.005", "integer overflow in " + quoted(at.text), at.column, text_);
  }
  [[noreturn]] void div_zero(const Node& at) const {
    fail("kopt.expr.004", "division by zero", at.column, text_);
  }
  [[noreturn]] void bad_arg(const Node& at, const std::string& why) const {
    fail("kopt.expr.006", quoted(at.text) + " " + why, at.column, text_);
  }

  int64_t lookup(const Node& n) const {
    auto it = vars_.find(n.text);
    if (it == vars_.end()) fail("kopt.expr.003", "unknown name " + quoted(n.text), n.column, text_);
    return it->second;
  }

  int64_t unary(const Node& n) const {
    const int64_t v = eval(*n.kids[0]);
    if (n.text == "!") return v == 0 ? 1 : 0;
    if (n.text == "+") return v;
    if (n.text == "~") return ~v;
    int64_t r = 0;
    if (__builtin_sub_overflow(int64_t{0}, v, &r)) overflow(n);
    return r;
  }

  int64_t binary(const Node& n) const {
    const std::string& op = n.text;
    const int64_t a = eval(*n.kids[0]);
    // C semantics: && and || short-circuit.
    if (op == "&&") return a != 0 && eval(*n.kids[1]) != 0 ? 1 : 0;
    if (op == "||") return a != 0 || eval(*n.kids[1]) != 0 ? 1 : 0;
    const int64_t b = eval(*n.kids[1]);
    int64_t r = 0;
    if (op == "+") {
      if (__builtin_add_overflow(a, b, &r)) overflow(n);
      return r;
    }
    if (op == "-") {
      if (__builtin_sub_overflow(a, b, &r)) overflow(n);
      return r;
    }
    if (op == "*") {
      if (__builtin_mul_overflow(a, b, &r)) overflow(n);
      return r;
    }
    if (op == "/" || op == "%" || op == "//") {
      if (b == 0) div_zero(n);
      if (a == std::numeric_limits<int64_t>::min() && b == -1) overflow(n);
      if (op == "//") return floor_div(a, b);
      return op == "/" ? a / b : a % b;
    }
    if (op == "**") return power(n, a, b);
    if (op == "&") return a & b;
    if (op == "|") return a | b;
    if (op == "^") return a ^ b;
    if (op == "<<" || op == ">>") {
      if (b < 0 || b > 63) bad_arg(n, "needs a shift count in 0..63, got " + std::to_string(b));
      if (op == ">>") return a >> b;  // arithmetic: rounds toward -infinity, as Python's
      if (b > 0 && (a > (std::numeric_limits<int64_t>::max() >> b) || a < (std::numeric_limits<int64_t>::min() >> b)))
        overflow(n);
      return static_cast<int64_t>(static_cast<uint64_t>(a) << b);
    }
    if (op == "==") return a == b;
    if (op == "!=") return a != b;
    if (op == "<") return a < b;
    if (op == "<=") return a <= b;
    if (op == ">") return a > b;
    if (op == ">=") return a >= b;
    return 0;  // unreachable: the parser only builds the operators above
  }

  /// floor(a / b) (Python's //): b != 0 and no overflow, checked by the caller.
  static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    if (a % b != 0 && ((a % b < 0) != (b < 0))) --q;
    return q;
  }

  /// a ** b for b >= 0 (Python's **), with overflow checked.
  int64_t power(const Node& n, int64_t a, int64_t b) const {
    if (b < 0) bad_arg(n, "needs an exponent >= 0, got " + std::to_string(b));
    int64_t r = 1;
    for (int64_t i = 0; i < b; ++i) {
      if (__builtin_mul_overflow(r, a, &r)) overflow(n);
      if (r == 0 || r == 1) break;  // stays there: 0**b, 1**b
      if (r == -1 && a == -1) {  // alternates: the parity of what is left decides
        return (b - i - 1) % 2 == 0 ? -1 : 1;
      }
    }
    return r;
  }

  /// ceil(a / b) for any signs; b == 0 is a division by zero.
  int64_t ceil_div(const Node& n, int64_t a, int64_t b) const {
    if (b == 0) div_zero(n);
    if (a == std::numeric_limits<int64_t>::min() && b == -1) overflow(n);
    int64_t q = a / b;
    const int64_t r = a % b;
    if (r != 0 && ((r > 0) == (b > 0))) ++q;
    return q;
  }

  int64_t call(const Node& n) const {
    std::vector<int64_t> args;
    args.reserve(n.kids.size());
    for (const auto& k : n.kids) args.push_back(eval(*k));
    switch (n.fn->fn) {
      case Fn::ceil_div: return ceil_div(n, args[0], args[1]);
      case Fn::min: {
        int64_t m = args[0];
        for (int64_t v : args) m = v < m ? v : m;
        return m;
      }
      case Fn::max: {
        int64_t m = args[0];
        for (int64_t v : args) m = v > m ? v : m;
        return m;
      }
      case Fn::abs:
        if (args[0] == std::numeric_limits<int64_t>::min()) overflow(n);
        return args[0] < 0 ? -args[0] : args[0];
      case Fn::pow2:
        if (args[0] < 0) bad_arg(n, "needs an argument >= 0, got " + std::to_string(args[0]));
        if (args[0] > 62) overflow(n);
        return int64_t{1} << args[0];
      case Fn::log2: {
        if (args[0] <= 0) bad_arg(n, "needs an argument > 0, got " + std::to_string(args[0]));
        int64_t r = 0;
        for (int64_t v = args[0]; v > 1; v >>= 1) ++r;
        return r;
      }
      case Fn::is_pow2: return args[0] > 0 && (args[0] & (args[0] - 1)) == 0 ? 1 : 0;
      case Fn::align_up: {
        if (args[1] == 0) div_zero(n);
        if (args[1] < 0) bad_arg(n, "needs an alignment > 0, got " + std::to_string(args[1]));
        int64_t r = 0;
        if (__builtin_mul_overflow(ceil_div(n, args[0], args[1]), args[1], &r)) overflow(n);
        return r;
      }
    }
    return 0;  // unreachable
  }

  const std::string& text_;
  const Bindings& vars_;
};

/// The C++ form of a node (Expr::cpp).
std::string cpp_of(const Node& n) {
  switch (n.kind) {
    case Node::Kind::integer:
      return n.value > 2147483647 ? std::to_string(n.value) + "LL" : std::to_string(n.value);
    case Node::Kind::name: return n.text;
    case Node::Kind::unary: return "(" + n.text + cpp_of(*n.kids[0]) + ")";
    case Node::Kind::binary: {
      const std::string a = cpp_of(*n.kids[0]), b = cpp_of(*n.kids[1]);
      if (n.text == "//") return "floor_div(" + a + ", " + b + ")";
      if (n.text == "**") return "ipow(" + a + ", " + b + ")";
      return "(" + a + " " + n.text + " " + b + ")";
    }
    case Node::Kind::call: {
      std::string out = n.text + "(";
      for (size_t i = 0; i < n.kids.size(); ++i) out += (i ? ", " : "") + cpp_of(*n.kids[i]);
      return out + ")";
    }
  }
  return "0";  // unreachable
}

bool has_python(const Node& n) {
  if (n.python) return true;
  for (const auto& k : n.kids)
    if (has_python(*k)) return true;
  return false;
}

void collect_names(const Node& n, std::set<std::string>& out) {
  if (n.kind == Node::Kind::name) out.insert(n.text);
  for (const auto& k : n.kids) collect_names(*k, out);
}

}  // namespace

Expr Expr::parse(const std::string& text) {
  Expr e;
  e.text_ = text;
  e.root_ = Parser(e.text_).parse_all();
  return e;
}

Expr Expr::constant(int64_t value) {
  Expr e;
  e.text_ = std::to_string(value);
  auto n = std::make_shared<Node>();
  n->kind = Node::Kind::integer;
  n->value = value;
  n->text = e.text_;
  n->column = 1;
  e.root_ = std::move(n);
  return e;
}

int64_t Expr::eval(const Bindings& vars) const {
  if (!root_) throw SpecError("kopt.expr.002", "cannot evaluate an empty expression");
  return Evaluator(text_, vars).eval(*root_);
}

std::set<std::string> Expr::names() const {
  std::set<std::string> out;
  if (root_) collect_names(*root_, out);
  return out;
}

std::string Expr::cpp() const {
  if (!root_) return std::string();
  // Without Python's own operators the text means the same in C++.
  return has_python(*root_) ? cpp_of(*root_) : text_;
}

std::optional<int64_t> Expr::as_constant() const {
  if (root_ && root_->kind == Node::Kind::integer) return root_->value;
  return std::nullopt;
}

}  // namespace kopt::spec
