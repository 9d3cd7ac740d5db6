// The tables of each paper (one .cpp per paper); catalogue.cpp lists them in order.
#pragma once

#include <vector>

#include "reproduce/reproduce.hpp"

namespace soac::reproduce {

std::vector<table_spec> sc20_tables();
std::vector<table_spec> fhpc17_tables();
std::vector<table_spec> write_construct_tables();
std::vector<table_spec> lookback_tables();
std::vector<table_spec> zone_tables();

}  // namespace soac::reproduce
