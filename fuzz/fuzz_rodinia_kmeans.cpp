// Rodinia k-means' point files on any bytes, text or binary (the first byte's low bit picks);
// accepted points must write and read back equal in the same format.
#include <cstdint>

#include "datasets/rodinia_kmeans.hpp"
#include "fuzz/common.hpp"

using namespace soac;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool binary = data[0] & 1;
  const auto dir = fuzz::fresh_dir("kmeans");
  fuzz::write_bytes_or_abort(dir / "points", fuzz::as_text(data + 1, size - 1));
  fuzz::accepted([&] {
    const auto read = binary ? datasets::read_rodinia_kmeans_binary : datasets::read_rodinia_kmeans_text;
    const auto write = binary ? datasets::write_rodinia_kmeans_binary : datasets::write_rodinia_kmeans_text;
    const auto p = read(dir / "points");
    if (static_cast<std::int64_t>(p.features.size()) != p.n * p.d) std::abort();
    write(dir / "again", p.n, p.d, p.features);
    const auto back = read(dir / "again");
    if (back.n != p.n || back.d != p.d || back.features != p.features) std::abort();
  });
  return 0;
}
