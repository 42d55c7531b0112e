// Overloaded{lambdas...}: one callable from several lambdas, the usual way to std::visit a
// variant with a case per alternative:
//   std::visit(core::Overloaded{[](const TextPart& t) { ... },
//                               [](const ToolCallPart& c) { ... }},
//              part);
#pragma once

namespace codeact::core {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace codeact::core
