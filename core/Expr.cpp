#include "core/Expr.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <vector>

#include "core/Strings.hpp"

namespace attnsim {

struct Expr::Node {
  enum class Kind { Literal, Variable, Not, Negate, Binary, In, Conditional };
  Kind kind = Kind::Literal;
  Value literal;
  std::string name;  // variable name or binary operator
  std::vector<std::shared_ptr<const Node>> children;
  std::size_t offset = 0;  // where a variable stands in the text
};

namespace {

using NodePtr = std::shared_ptr<const Expr::Node>;
using Kind = Expr::Node::Kind;

NodePtr makeNode(Kind kind, std::string name, std::vector<NodePtr> children, Value literal = {}) {
  auto n = std::make_shared<Expr::Node>();
  n->kind = kind;
  n->name = std::move(name);
  n->children = std::move(children);
  n->literal = std::move(literal);
  return n;
}

class Parser {
 public:
  Parser(std::string_view text, const Expr::VariableCheck& check) : text_(text), check_(check) {}

  NodePtr parseAll() {
    NodePtr n = conditional();
    skipSpace();
    if (pos_ != text_.size()) fail("unexpected '" + std::string(text_.substr(pos_, 1)) + "'");
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { throw ExprSyntaxError(pos_, message); }

  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool accept(std::string_view token) {
    skipSpace();
    if (text_.substr(pos_, token.size()) != token) return false;
    // A word operator must not be the prefix of an identifier ("in" vs "index").
    const bool word = std::isalpha(static_cast<unsigned char>(token.front())) != 0;
    if (word && pos_ + token.size() < text_.size()) {
      const char next = text_[pos_ + token.size()];
      if (std::isalnum(static_cast<unsigned char>(next)) || next == '_') return false;
    }
    pos_ += token.size();
    return true;
  }

  void expect(std::string_view token) {
    if (!accept(token)) fail("expected '" + std::string(token) + "'");
  }

  NodePtr conditional() {
    NodePtr cond = coalesce();
    if (!accept("?")) return cond;
    NodePtr yes = conditional();
    expect(":");
    NodePtr no = conditional();
    return makeNode(Kind::Conditional, "?:", {cond, yes, no});
  }

  NodePtr coalesce() {
    NodePtr left = logicalOr();
    while (accept("??")) left = makeNode(Kind::Binary, "??", {left, logicalOr()});
    return left;
  }

  NodePtr logicalOr() {
    NodePtr left = logicalAnd();
    while (accept("||")) left = makeNode(Kind::Binary, "||", {left, logicalAnd()});
    return left;
  }

  NodePtr logicalAnd() {
    NodePtr left = comparison();
    while (accept("&&")) left = makeNode(Kind::Binary, "&&", {left, comparison()});
    return left;
  }

  NodePtr comparison() {
    NodePtr left = additive();
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (accept(op)) return makeNode(Kind::Binary, op, {left, additive()});
    }
    if (accept("not in")) return makeNode(Kind::Not, "!", {inList(left)});
    if (accept("in")) return inList(left);
    return left;
  }

  NodePtr inList(NodePtr subject) {
    expect("[");
    std::vector<NodePtr> items{std::move(subject)};
    if (!accept("]")) {
      do {
        items.push_back(conditional());
      } while (accept(","));
      expect("]");
    }
    return makeNode(Kind::In, "in", std::move(items));
  }

  NodePtr additive() {
    NodePtr left = multiplicative();
    for (;;) {
      if (accept("+")) {
        left = makeNode(Kind::Binary, "+", {left, multiplicative()});
      } else if (accept("-")) {
        left = makeNode(Kind::Binary, "-", {left, multiplicative()});
      } else {
        return left;
      }
    }
  }

  NodePtr multiplicative() {
    NodePtr left = unary();
    for (;;) {
      if (accept("*")) {
        left = makeNode(Kind::Binary, "*", {left, unary()});
      } else if (accept("/")) {
        left = makeNode(Kind::Binary, "/", {left, unary()});
      } else if (accept("%")) {
        left = makeNode(Kind::Binary, "%", {left, unary()});
      } else {
        return left;
      }
    }
  }

  NodePtr unary() {
    if (accept("!")) return makeNode(Kind::Not, "!", {unary()});
    if (accept("-")) return makeNode(Kind::Negate, "-", {unary()});
    return primary();
  }

  NodePtr primary() {
    skipSpace();
    if (pos_ >= text_.size()) fail("unexpected end of expression");
    const char c = text_[pos_];
    if (accept("(")) {
      NodePtr inner = conditional();
      expect(")");
      return inner;
    }
    if (c == '\'' || c == '"') return stringLiteral(c);
    if (std::isdigit(static_cast<unsigned char>(c))) return number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return identifier();
    fail("unexpected '" + std::string(1, c) + "'");
  }

  NodePtr stringLiteral(char quote) {
    const std::size_t start = ++pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) ++pos_;
    if (pos_ >= text_.size()) fail("unterminated string");
    std::string s(text_.substr(start, pos_ - start));
    ++pos_;
    return makeNode(Kind::Literal, "", {}, Value{std::move(s)});
  }

  NodePtr number() {
    const std::size_t start = pos_;
    bool has_dot = false;
    while (pos_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.')) {
      has_dot = has_dot || text_[pos_] == '.';
      ++pos_;
    }
    const std::string_view digits = text_.substr(start, pos_ - start);
    const char* end = digits.data() + digits.size();
    if (has_dot) {
      double d = 0;
      const auto [ptr, ec] = std::from_chars(digits.data(), end, d);
      if (ec != std::errc{} || ptr != end) fail("malformed or out-of-range number '" + std::string(digits) + "'");
      return makeNode(Kind::Literal, "", {}, Value{d});
    }
    std::int64_t n = 0;
    const auto [ptr, ec] = std::from_chars(digits.data(), end, n);
    if (ec != std::errc{} || ptr != end) fail("integer '" + std::string(digits) + "' is out of range");
    return makeNode(Kind::Literal, "", {}, Value{n});
  }

  NodePtr identifier() {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    const std::string name(text_.substr(start, pos_ - start));
    if (name == "true") return makeNode(Kind::Literal, "", {}, Value{true});
    if (name == "false") return makeNode(Kind::Literal, "", {}, Value{false});
    if (name == "null") return makeNode(Kind::Literal, "", {}, Value{});
    if (const std::string problem = check_.known ? check_.known(name) : ""; !problem.empty()) {
      pos_ = start;
      fail(problem);
    }
    auto variable = std::make_shared<Expr::Node>();
    variable->kind = Kind::Variable;
    variable->name = name;
    variable->offset = start;
    return variable;
  }

  std::string_view text_;
  const Expr::VariableCheck& check_;
  std::size_t pos_ = 0;
};

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  const auto x = asNumber(a);
  const auto y = asNumber(b);
  if (!x || !y) return Value{};
  const bool integral = std::holds_alternative<std::int64_t>(a) && std::holds_alternative<std::int64_t>(b);
  if (integral) {
    const auto i = std::get<std::int64_t>(a);
    const auto j = std::get<std::int64_t>(b);
    if (op == "+") return Value{i + j};
    if (op == "-") return Value{i - j};
    if (op == "*") return Value{i * j};
    if (j == 0) return Value{};
    if (op == "%") return Value{i % j};
    return Value{static_cast<double>(i) / static_cast<double>(j)};
  }
  if (op == "+") return Value{*x + *y};
  if (op == "-") return Value{*x - *y};
  if (op == "*") return Value{*x * *y};
  if (*y == 0.0) return Value{};
  if (op == "%") return Value{std::fmod(*x, *y)};
  return Value{*x / *y};
}

Value compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return Value{valuesEqual(a, b)};
  if (op == "!=") return Value{!valuesEqual(a, b)};
  const auto x = asNumber(a);
  const auto y = asNumber(b);
  if (!x || !y) return Value{false};
  if (op == "<") return Value{*x < *y};
  if (op == "<=") return Value{*x <= *y};
  if (op == ">") return Value{*x > *y};
  return Value{*x >= *y};
}

Value eval(const Expr::Node& n, const Env& env) {
  switch (n.kind) {
    case Kind::Literal:
      return n.literal;
    case Kind::Variable: {
      const auto it = env.find(n.name);
      return it == env.end() ? Value{} : it->second;
    }
    case Kind::Not:
      return Value{!truthy(eval(*n.children[0], env))};
    case Kind::Negate:
      return arithmetic("-", Value{std::int64_t{0}}, eval(*n.children[0], env));
    case Kind::Conditional:
      return truthy(eval(*n.children[0], env)) ? eval(*n.children[1], env) : eval(*n.children[2], env);
    case Kind::In: {
      const Value subject = eval(*n.children[0], env);
      for (std::size_t i = 1; i < n.children.size(); ++i) {
        if (valuesEqual(subject, eval(*n.children[i], env))) return Value{true};
      }
      return Value{false};
    }
    case Kind::Binary:
      break;
  }
  const std::string& op = n.name;
  if (op == "&&") return Value{truthy(eval(*n.children[0], env)) && truthy(eval(*n.children[1], env))};
  if (op == "||") return Value{truthy(eval(*n.children[0], env)) || truthy(eval(*n.children[1], env))};
  if (op == "??") {
    Value left = eval(*n.children[0], env);
    return isNull(left) ? eval(*n.children[1], env) : left;
  }
  const Value a = eval(*n.children[0], env);
  const Value b = eval(*n.children[1], env);
  if (op == "+" || op == "-" || op == "*" || op == "/" || op == "%") return arithmetic(op, a, b);
  return compare(op, a, b);
}

}  // namespace

namespace {

const char* typeName(ValueType t) {
  switch (t) {
    case ValueType::Bool:
      return "a flag (true/false)";
    case ValueType::Number:
      return "a number";
    case ValueType::String:
      return "a string";
    case ValueType::Any:
      break;
  }
  return "any value";
}

bool literalFits(ValueType t, const Value& v) {
  if (isNull(v) || t == ValueType::Any) return true;  // null compares false with anything, by design
  if (t == ValueType::Bool) return std::holds_alternative<bool>(v);
  if (t == ValueType::Number) return std::holds_alternative<std::int64_t>(v) || std::holds_alternative<double>(v);
  return std::holds_alternative<std::string>(v);
}

// The comparison of `variable` with `literal` under `op`: "" when it can be true, else why not.
std::string comparisonProblem(const Expr::Node& variable, const VariableType& type, const std::string& op,
                              const Value& literal) {
  const bool order = op == "<" || op == "<=" || op == ">" || op == ">=";
  if (order && (type.type == ValueType::String || type.type == ValueType::Bool)) {
    return fmt::format("'{}' is {}: '{}' orders numbers only", variable.name, typeName(type.type), op);
  }
  if (!literalFits(type.type, literal)) {
    return fmt::format("'{}' is {}, compared with {}", variable.name, typeName(type.type), toLiteral(literal));
  }
  if (type.type == ValueType::String && !type.allowed.empty() && std::holds_alternative<std::string>(literal)) {
    const auto& text = std::get<std::string>(literal);
    if (std::find(type.allowed.begin(), type.allowed.end(), text) == type.allowed.end()) {
      return fmt::format("'{}' is never {} (its values: {}){}", variable.name, toLiteral(literal),
                         join(type.allowed, ", "), didYouMean(text, type.allowed));
    }
  }
  return {};
}

// Every comparison between a variable and a literal in the tree, checked against the variable's type.
void checkTypes(const Expr::Node& n, const std::function<VariableType(std::string_view)>& type_of) {
  const bool comparison =
      n.kind == Kind::In || (n.kind == Kind::Binary && (n.name == "==" || n.name == "!=" || n.name == "<" ||
                                                        n.name == "<=" || n.name == ">" || n.name == ">="));
  if (comparison) {
    // `in` compares its first child with each item; a binary comparison its two sides.
    const std::size_t subjects = n.kind == Kind::In ? 1 : n.children.size();
    for (std::size_t i = 0; i < subjects; ++i) {
      const Expr::Node& variable = *n.children[i];
      if (variable.kind != Kind::Variable) continue;
      const VariableType type = type_of(variable.name);
      for (std::size_t j = 0; j < n.children.size(); ++j) {
        const Expr::Node& other = *n.children[j];
        if (j == i || other.kind != Kind::Literal) continue;
        if (auto problem = comparisonProblem(variable, type, n.name, other.literal); !problem.empty()) {
          throw ExprSyntaxError(variable.offset, problem);
        }
      }
    }
  }
  for (const auto& child : n.children) checkTypes(*child, type_of);
}

}  // namespace

Expr Expr::parse(std::string_view text, const VariableCheck& check_variable) {
  Expr e;
  e.text_ = std::string(text);
  e.root_ = Parser(text, check_variable).parseAll();
  if (check_variable.type_of) checkTypes(*e.root_, check_variable.type_of);
  return e;
}

Value Expr::evaluate(const Env& env) const {
  if (!root_) return Value{true};
  return eval(*root_, env);
}

}  // namespace attnsim
