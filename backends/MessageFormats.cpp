#include "backends/MessageFormats.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>

namespace attnsim {

const std::vector<std::string> kMessageFormats{"py", "torch", "upper"};

namespace {

// str(x) in Python: True/False, None, numbers and strings as they are.
std::string pythonStr(const Value& v) {
  if (isNull(v)) return "None";
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "True" : "False";
  return toDisplay(v);
}

// str(torch.dtype): the model dtypes attnsim spells fp16/bf16/fp32 are torch.float16/bfloat16/float32.
std::string torchDtype(const Value& v) {
  static const std::map<std::string, std::string, std::less<>> kTorch{
      {"fp16", "torch.float16"}, {"bf16", "torch.bfloat16"}, {"fp32", "torch.float32"}};
  const auto* s = std::get_if<std::string>(&v);
  const auto it = s ? kTorch.find(*s) : kTorch.end();
  return it == kTorch.end() ? pythonStr(v) : it->second;
}

}  // namespace

std::string formatValue(const Value& v, std::string_view format) {
  if (format == "py") return pythonStr(v);
  if (format == "torch") return torchDtype(v);
  if (format == "upper") {
    std::string out = toDisplay(v);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return out;
  }
  return toDisplay(v);
}

}  // namespace attnsim
