#include "base/time.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace husk::base {

std::string now_rfc3339() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  // The civil date by arithmetic: gmtime_r would load the local time zone
  // first (glibc's tzset reads /etc/localtime), which UTC never needs.
  using namespace std::chrono;
  const sys_seconds secs{seconds{ts.tv_sec}};
  const sys_days day = floor<days>(secs);
  const year_month_day ymd{day};
  const hh_mm_ss<seconds> hms{secs - day};
  char buf[64];
  snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02lld.%09ldZ", static_cast<int>(ymd.year()),
           static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), static_cast<int>(hms.hours().count()),
           static_cast<int>(hms.minutes().count()), static_cast<long long>(hms.seconds().count()), ts.tv_nsec);
  return buf;
}

}  // namespace husk::base
