// An enum's names, written once as a table: the text of a value, and the value of a text (a
// usage_error naming what was parsed and every name otherwise). The primitives' strategies and
// the hist toggles use it, so their names, parsers and error messages cannot disagree.
//
//   inline constexpr enum_name<scatter_strategy> scatter_strategy_names[] = {{scatter_strategy::plain, "plain"}, ...};
//   name_of(scatter_strategy_names, s);  parse_name(scatter_strategy_names, "plain", "scatter strategy");
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace soac {

template <class E>
struct enum_name {
  E value;
  std::string_view name;
};

template <class E>
constexpr std::string_view name_of(std::span<const enum_name<E>> names, E value) {
  for (const auto& n : names)
    if (n.value == value) return n.name;
  return "?";
}

// "a, b or c", for help texts and errors.
template <class E>
std::string names_text(std::span<const enum_name<E>> names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + std::string(names[i].name);
  return out;
}

template <class E>
E parse_name(std::span<const enum_name<E>> names, std::string_view text, std::string_view what) {
  for (const auto& n : names)
    if (n.name == text) return n.value;
  throw usage_error("unknown " + std::string(what) + " '" + std::string(text) + "' (expected " + names_text(names) + ")");
}

}  // namespace soac
