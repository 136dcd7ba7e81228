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

#include "core/Value.hpp"

namespace attnsim {

class ExprSyntaxError : public std::runtime_error {
 public:
  ExprSyntaxError(std::size_t offset, const std::string& message) : std::runtime_error(message), offset_(offset) {}
  [[nodiscard]] std::size_t offset() const { return offset_; }

 private:
  std::size_t offset_;
};

class Expr {
 public:
  struct Node;
  // Returns an empty string when the name is a known variable, else the error text to report.
  using VariableCheck = std::function<std::string(std::string_view)>;

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
