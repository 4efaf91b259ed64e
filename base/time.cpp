#include "base/time.h"

#include <cstdio>
#include <ctime>

namespace husk::base {

std::string now_rfc3339() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t;
  gmtime_r(&ts.tv_sec, &t);
  char buf[64];
  size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &t);
  snprintf(buf + n, sizeof buf - n, ".%09ldZ", ts.tv_nsec);
  return buf;
}

}  // namespace husk::base
