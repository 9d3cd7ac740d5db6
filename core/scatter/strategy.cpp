#include "core/scatter/strategy.hpp"

#include <sstream>

#include "core/enum_names.hpp"
#include "core/error.hpp"

namespace soac {

namespace {
constexpr enum_name<scatter_strategy> strategy_names[] = {{scatter_strategy::automatic, "auto"},
                                                          {scatter_strategy::plain, "plain"},
                                                          {scatter_strategy::chunked, "chunked"},
                                                          {scatter_strategy::blocked, "blocked"}};
}  // namespace

std::string_view to_string(scatter_strategy s) { return name_of<scatter_strategy>(strategy_names, s); }

scatter_strategy parse_scatter_strategy(std::string_view s) {
  return parse_name<scatter_strategy>(strategy_names, s, "scatter strategy");
}

std::string scatter_plan::describe() const {
  if (host) return "host OpenMP loop";
  std::ostringstream s;
  s << to_string(strategy) << " (" << block_threads << " threads/block, " << items_per_thread
    << " write" << (items_per_thread == 1 ? "" : "s") << "/thread, " << grid << " blocks)";
  return s.str();
}

scatter_plan plan_scatter(std::int64_t n, const scatter_options& options) {
  if (options.chunk < 1) throw usage_error("scatter chunk must be at least 1");
  scatter_plan plan;
  plan.block_threads = scatter_tuning::block_threads;
  plan.strategy = options.strategy == scatter_strategy::automatic ? scatter_strategy::blocked : options.strategy;
  switch (plan.strategy) {
    case scatter_strategy::plain: plan.items_per_thread = 1; break;
    case scatter_strategy::chunked: plan.items_per_thread = options.chunk; break;
    default: plan.items_per_thread = scatter_tuning::blocked_items; break;
  }
  const std::int64_t per_block = std::int64_t{plan.block_threads} * plan.items_per_thread;
  plan.grid = n <= 0 ? 0 : (n + per_block - 1) / per_block;
  return plan;
}

}  // namespace soac
