#include "reproduce/tables.hpp"

namespace soac::reproduce {

const std::vector<table_spec>& catalogue() {
  static const std::vector<table_spec> all = [] {
    std::vector<table_spec> out;
    for (auto part : {sc20_tables, fhpc17_tables, write_construct_tables, lookback_tables, zone_tables})
      for (auto& t : part()) out.push_back(std::move(t));
    return out;
  }();
  return all;
}

}  // namespace soac::reproduce
