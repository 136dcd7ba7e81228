#pragma once
// Rule expressions used by the catalog: the engines' conditions written as data.
//
//   literals    12  9.0  'fa3'  "fa3"  true  false  null
//   variables   cc_major  kv_dtype  spec_topk ...   (checked against a known set at load time)
//   operators   ?:  ??  ||  &&  !  == != < <= > >=  in [..]  + - * / %  ( )
//
// Comparisons with null are false, so `spec_topk > 1` is false when speculation is off;
// `a ?? b` is a unless a is null.
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/Value.hpp"

namespace attnsim {

class ExprSyntaxError : public std::runtime_error {
 public:
  ExprSyntaxError(std::size_t offset, const std::string& message) : std::runtime_error(message), offset_(offset) {}
  [[nodiscard]] std::size_t offset() const { return offset_; }

 private:
  std::size_t offset_;
};

// What a variable holds, for checking a rule's comparisons when the catalog loads.
enum class ValueType { Any, Bool, Number, String };
struct VariableType {
  ValueType type = ValueType::Any;
  std::vector<std::string> allowed;  // String: every value it can take (empty: not a closed set)
};

class Expr {
 public:
  struct Node;
  // What the parser asks about each variable a rule names.
  struct VariableCheck {
    // Returns an empty string when the name is a known variable, else the error text to report.
    std::function<std::string(std::string_view)> known;
    // The variable's type; when given, a comparison of a variable with a literal of another type
    // (`platform == 3`), an order comparison of a string or flag, or a string no value of the variable
    // can equal (`platform == 'cudaa'`) is an ExprSyntaxError at the variable.
    std::function<VariableType(std::string_view)> type_of;

    VariableCheck() = default;
    std::string operator()(std::string_view name) const { return known ? known(name) : std::string(); }
    template <class F>
    requires std::is_invocable_r_v<std::string, F, std::string_view> VariableCheck(F f)
        : known(std::move(f)) {}  // NOLINT(google-explicit-constructor): a plain check
  };

  Expr() = default;
  static Expr parse(std::string_view text, const VariableCheck& check_variable);

  [[nodiscard]] Value evaluate(const Env& env) const;
  [[nodiscard]] bool test(const Env& env) const { return truthy(evaluate(env)); }
  [[nodiscard]] const std::string& text() const { return text_; }
  [[nodiscard]] bool empty() const { return root_ == nullptr; }

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

}  // namespace attnsim
