// What was built: recorded in every benchmark JSON so numbers can be traced to a commit.
#pragma once

namespace soac {

struct build_info {
  const char* version;
  const char* commit;   // full git hash, or "unknown" outside a checkout
  bool dirty;           // tracked files differed from the commit at build time
  const char* build_type;
  const char* cuda_architectures;
};

const build_info& this_build();

}  // namespace soac
