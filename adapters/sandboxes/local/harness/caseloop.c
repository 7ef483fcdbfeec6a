/* rlpipe's case loop: the manager's per-case work (local_harness.Runner.run) in C, for the common cases.
 *
 * Why C: after every fork the kernel write-protects all of the manager's pages, so each page the manager writes before
 * the next fork is a fault (and, while the case process lives, a copy). Python's bookkeeping between two forks writes
 * about 120 pages (reference counts, frames, allocations); this loop writes a handful (its stack and one buffer). The
 * case process itself is unchanged: rl_run_cases returns the case's index in the child, and Python runs the case.
 *
 * Same semantics as Runner.run, event for event: a budget check, the case's fresh directory, stdin and the output memfds
 * on 0-3, fork, a pidfd polled as the wall clock, every stray process killed, outputs read up to the cap as the reply
 * counts bytes (UTF-8 with invalid bytes replaced as Python's "replace" does, JSON escapes included), the directory
 * removed, and the "case" or "budget" event written to the event stream. Whatever is unusual (the directory exists, fork
 * fails, the directory cannot be removed) is handed back to Python, which owns those paths.
 *
 * Loaded with ctypes.PyDLL (the GIL stays held, as os.fork holds it) and built by the server with the host's C
 * compiler; without one the Python loop runs instead.
 *
 * rl_huge_text: the zygote's interpreter code as anonymous memory (huge pages where the kernel gives them), so that a
 * case process inherits its mapping at fork instead of faulting the file's pages in one by one and unmapping them at
 * exit (about 30 faults per case on CPython 3.11). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The running interpreter's fork hooks (what os.fork calls), resolved from the process at load time. */
void PyOS_BeforeFork(void);
void PyOS_AfterFork_Parent(void);
void PyOS_AfterFork_Child(void);

enum { JOBS_FD = 100, EVENTS_FD = 101 };
enum { RL_DONE = -1, RL_RUN_IN_PYTHON = -2, RL_REMOVE_DIR = -3, RL_NO_MEMORY = -4 };

/* What Python needs when rl_run_cases hands a case back: which one, and (RL_REMOVE_DIR) whether to go on after it. */
struct rl_handback {
  int index;
  int go_on;
};

static double monotonic_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---------- a growable byte buffer (kept across cases: its pages are reused, not faulted in anew) ---------- */
struct buf {
  char *p;
  size_t len, cap;
};
static int reserve(struct buf *b, size_t extra) {
  if (b->len + extra <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + extra) {
    if (cap > ((size_t)1 << 40)) return -1;
    cap *= 2;
  }
  char *p = realloc(b->p, cap);
  if (p == NULL) return -1;
  b->p = p;
  b->cap = cap;
  return 0;
}
static int put(struct buf *b, const char *s, size_t n) {
  if (reserve(b, n) != 0) return -1;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  return 0;
}
static int putf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int putf(struct buf *b, const char *fmt, ...) {
  char tmp[160];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof tmp) return -1;
  return put(b, tmp, (size_t)n);
}

/* ---------- output as the reply carries it ---------- */

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when invalid; *bad is then the length of the maximal invalid
 * subpart (what Python's decoder replaces with one U+FFFD), per the Unicode standard's table of well-formed sequences. */
static size_t utf8_seq(const unsigned char *s, size_t n, size_t *bad) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) need = 1;
  else if (c == 0xE0) { need = 2; lo = 0xA0; }
  else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) need = 2;
  else if (c == 0xED) { need = 2; hi = 0x9F; }
  else if (c == 0xF0) { need = 3; lo = 0x90; }
  else if (c >= 0xF1 && c <= 0xF3) need = 3;
  else if (c == 0xF4) { need = 3; hi = 0x8F; }
  else { *bad = 1; return 0; }
  size_t i = 1;
  for (; i <= need; i++) {
    if (i >= n) { *bad = i; return 0; }
    unsigned char lo_i = i == 1 ? lo : 0x80, hi_i = i == 1 ? hi : 0xBF;
    if (s[i] < lo_i || s[i] > hi_i) { *bad = i; return 0; }
  }
  return need + 1;
}

/* Bytes a character (valid UTF-8, len bytes) takes inside a JSON string: what local_harness.reply_bytes counts. */
static size_t reply_size(const unsigned char *s, size_t len) {
  if (len > 1) return len;
  unsigned char c = s[0];
  if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t') return 2;
  return c < 0x20 ? 6 : 1;
}

static int put_escaped(struct buf *b, const unsigned char *s, size_t len) {
  if (len > 1) return put(b, (const char *)s, len);
  unsigned char c = s[0];
  switch (c) {
    case '"': return put(b, "\\\"", 2);
    case '\\': return put(b, "\\\\", 2);
    case '\b': return put(b, "\\b", 2);
    case '\f': return put(b, "\\f", 2);
    case '\n': return put(b, "\\n", 2);
    case '\r': return put(b, "\\r", 2);
    case '\t': return put(b, "\\t", 2);
    default:
      if (c < 0x20) return putf(b, "\\u%04x", c);
      return put(b, (const char *)s, 1);
  }
}

/* Appends data as a JSON string: decoded as Python's "replace" does, and cut to the longest whole-character prefix whose
 * size in the reply is at most cap. *cut: whether anything was cut (as CaseFiles.read: data holds up to cap + 1 bytes
 * of the stream, so more than cap bytes always means cut). Returns -1 when out of memory. */
static int put_reply_string(struct buf *b, const unsigned char *data, size_t n, size_t cap, int *cut) {
  static const unsigned char fffd[3] = {0xEF, 0xBF, 0xBD};
  size_t size = 0;
  *cut = n > cap;
  if (put(b, "\"", 1) != 0) return -1;
  for (size_t i = 0; i < n;) {
    size_t bad = 0, len = utf8_seq(data + i, n - i, &bad);
    const unsigned char *ch = len ? data + i : fffd;
    size_t chlen = len ? len : 3, r = reply_size(ch, chlen);
    if (size + r > cap) {
      *cut = 1;
      break;
    }
    if (put_escaped(b, ch, chlen) != 0) return -1;
    size += r;
    i += len ? len : bad;
  }
  return put(b, "\"", 1);
}

/* For tests: data as the reply's JSON string (with its quotes) into out; returns its length, or -1 when it does not
 * fit. *cut as above. */
long rl_reply_string(const unsigned char *data, long n, long cap, char *out, long out_cap, int *cut) {
  struct buf b = {0};
  if (put_reply_string(&b, data, (size_t)n, (size_t)cap, cut) != 0 || (long)b.len > out_cap) {
    free(b.p);
    return -1;
  }
  memcpy(out, b.p, b.len);
  long len = (long)b.len;
  free(b.p);
  return len;
}

static int contains(const struct buf *b, size_t from, const char *needle) {
  return memmem(b->p + from, b->len - from, needle, strlen(needle)) != NULL;
}

/* ---------- processes ---------- */

static void reap(void) {
  int status;
  while (waitpid(-1, &status, WNOHANG) > 0) {
  }
}

/* local_harness.kill_strays: kill and reap every process of the PID namespace but pid 1 and this one, until none is
 * left (5 s at most). */
static void kill_strays(void) {
  pid_t self = getpid();
  double deadline = monotonic_s() + 5.0;
  for (;;) {
    int others = 0;
    DIR *d = opendir("/proc");
    if (d == NULL) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      char *end;
      long pid = strtol(e->d_name, &end, 10);
      if (*end != '\0' || pid <= 1 || pid == self) continue;
      others++;
      kill((pid_t)pid, SIGKILL);
    }
    closedir(d);
    reap();
    if (others == 0 || monotonic_s() > deadline) return;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
}

/* local_harness.end_strays: nothing when this process has no child left (one waitpid); otherwise kill them all. */
static void end_strays(void) {
  int status;
  if (waitpid(-1, &status, WNOHANG) == -1 && errno == ECHILD) return;
  kill_strays();
}

/* waitpid with a wall-clock limit: a pidfd polled (no signal handler), or, should the kernel refuse a pidfd, waitpid
 * polled every millisecond. On timeout the process is killed. Returns whether it timed out. */
static int wait_child(pid_t pid, double timeout_s, int *status) {
  int timed_out = 0;
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (pidfd >= 0) {
    long ms = (long)(timeout_s * 1000.0);
    struct pollfd p = {pidfd, POLLIN, 0};
    int r;
    do r = poll(&p, 1, (int)(ms < 1 ? 1 : ms)); while (r < 0 && errno == EINTR);
    timed_out = r == 0;
    close(pidfd);
  } else {
    double deadline = monotonic_s() + timeout_s;
    for (;;) {
      pid_t r = waitpid(pid, status, WNOHANG);
      if (r == pid) return 0;
      if (r < 0 && errno != EINTR) break;
      if (monotonic_s() > deadline) {
        timed_out = 1;
        break;
      }
      struct timespec ms = {0, 1000000};
      nanosleep(&ms, NULL);
    }
  }
  if (timed_out) kill(pid, SIGKILL);
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
  return timed_out;
}

/* ---------- memfds on 0-3 ---------- */

static int reset_files(const char *stdin_data, size_t stdin_len) {
  struct stat st;
  for (int fd = 0; fd < 4; fd++) {
    if (fstat(fd, &st) == 0 && st.st_size > 0 && ftruncate(fd, 0) != 0) return -1;
    if (lseek(fd, 0, SEEK_SET) < 0) return -1;
  }
  for (size_t off = 0; off < stdin_len;) {
    ssize_t w = write(0, stdin_data + off, stdin_len - off);
    if (w <= 0) return -1;
    off += (size_t)w;
  }
  return lseek(0, 0, SEEK_SET) < 0 ? -1 : 0;
}

static struct buf raw, event;

/* The stream on fd, as the reply's JSON string, appended to the event; *cut when the cap cut it. */
static int put_stream(int fd, size_t cap, int *cut) {
  struct stat st;
  *cut = 0;
  if (fstat(fd, &st) != 0 || st.st_size == 0) return put(&event, "\"\"", 2);
  size_t want = (size_t)st.st_size < cap + 1 ? (size_t)st.st_size : cap + 1;
  raw.len = 0;
  if (reserve(&raw, want) != 0) return -1;
  ssize_t got = pread(fd, raw.p, want, 0);
  if (got < 0) got = 0;
  return put_reply_string(&event, (const unsigned char *)raw.p, (size_t)got, cap, cut);
}

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int emit_budget(int index) {
  event.len = 0;
  if (putf(&event, "{\"event\":\"budget\",\"index\":%d}\n", index) != 0) return -1;
  return write_all(EVENTS_FD, event.p, event.len);
}

/* Runs cases first..n-1 of a program (Runner.run for each). stdins[i] holds stdin_lens[i] bytes; call: a function-call
 * program, whose returned value is on fd 3; stop_on_failure: check the job stream for the server's "stop" between
 * cases. Returns the case's index in a case process (Python runs the case there and exits), RL_DONE when the cases
 * are over (all run, out of budget or stopped), or hands a case back to Python (*back): RL_RUN_IN_PYTHON (run case
 * back->index with Runner.run, then call again from the next), RL_REMOVE_DIR (the case ran and its event is out, but
 * its directory /work/c<index> could not be removed: remove it, then go on from the next case if back->go_on),
 * RL_NO_MEMORY (run case back->index and the rest in Python). */
int rl_run_cases(int first, int n, const char *const *stdins, const long *stdin_lens, double run_timeout_s,
                 double deadline, long cap_bytes, int call, int stop_on_failure, struct rl_handback *back) {
  char cdir[64];
  size_t cap = (size_t)cap_bytes;
  for (int i = first; i < n; i++) {
    back->index = i;
    back->go_on = 1;
    if (i > first && stop_on_failure) {
      struct pollfd p = {JOBS_FD, POLLIN, 0};
      if (poll(&p, 1, 0) > 0) return RL_DONE;
    }
    double left_s = deadline - monotonic_s();
    if (left_s <= 0) {
      emit_budget(i);
      return RL_DONE;
    }
    int cut_by_budget = left_s < run_timeout_s;
    snprintf(cdir, sizeof cdir, "/work/c%d", i);
    if (mkdir(cdir, 0700) != 0) return RL_RUN_IN_PYTHON; /* an earlier case planted it: Python removes it */
    if (chdir(cdir) != 0 || reset_files(stdins[i], (size_t)stdin_lens[i]) != 0) {
      if (chdir("/work") == 0) rmdir(cdir);
      return RL_RUN_IN_PYTHON;
    }
    double t0 = monotonic_s();
    PyOS_BeforeFork();
    pid_t pid = fork();
    if (pid == 0) {
      PyOS_AfterFork_Child();
      return i;
    }
    PyOS_AfterFork_Parent();
    if (pid < 0) { /* processes left behind exhaust the process limit: Python clears them and retries */
      if (chdir("/work") == 0) rmdir(cdir);
      return RL_RUN_IN_PYTHON;
    }
    double t1 = monotonic_s(), limit_s = run_timeout_s < left_s ? run_timeout_s : left_s;
    int status = 0, timed_out = wait_child(pid, limit_s, &status);
    double t2 = monotonic_s();
    end_strays();
    event.len = 0;
    int out_cut = 0, err_cut = 0, value_cut = 0, ok = 0;
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    ok |= putf(&event, "{\"event\":\"case\",\"index\":%d,\"exitCode\":", i);
    ok |= WIFEXITED(status) ? putf(&event, "%d", WEXITSTATUS(status)) : put(&event, "null", 4);
    ok |= sig ? putf(&event, ",\"signal\":%d", sig) : put(&event, ",\"signal\":null", 14);
    ok |= put(&event, ",\"stdout\":", 10);
    ok |= put_stream(1, cap, &out_cut);
    ok |= put(&event, ",\"stderr\":", 10);
    size_t stderr_at = event.len;
    ok |= put_stream(2, cap, &err_cut);
    size_t stderr_end = event.len;
    if (call) {
      struct stat st;
      if (fstat(3, &st) == 0 && st.st_size > 0) {
        ok |= put(&event, ",\"valueJson\":", 13);
        ok |= put_stream(3, cap, &value_cut);
      }
    }
    if (chdir("/work") != 0) ok = -1;
    int removed = rmdir(cdir) == 0;
    if (ok != 0) return RL_NO_MEMORY; /* the case ran but cannot be reported: Python runs it, and the rest, again */
    if (timed_out && cut_by_budget) {
      emit_budget(i);
      back->go_on = 0;
      return removed ? RL_DONE : RL_REMOVE_DIR;
    }
    /* The escaped stderr, searched as Runner.run searches the text (these words have nothing to escape). */
    struct buf err = {event.p, stderr_end, event.cap};
    int too_large = contains(&err, stderr_at, "File too large");
    int memory = contains(&err, stderr_at, "MemoryError") || contains(&err, stderr_at, "bad_alloc") ||
                 contains(&err, stderr_at, "heap out of memory");
    ok |= putf(&event, ",\"timeMs\":%.3f,\"timedOut\":%s,\"outputExceeded\":%s,\"memoryExceeded\":%s",
               (t2 - t1) * 1000.0, timed_out || sig == SIGXCPU ? "true" : "false",
               out_cut || err_cut || sig == SIGXFSZ || too_large ? "true" : "false", memory ? "true" : "false");
    ok |= putf(&event, ",\"t\":[%.3f,%.3f,%.3f]}\n", (t1 - t0) * 1000.0, (t2 - t1) * 1000.0, (monotonic_s() - t2) * 1000.0);
    if (ok != 0) return RL_NO_MEMORY;
    if (write_all(EVENTS_FD, event.p, event.len) != 0) return RL_DONE; /* the server is gone */
    if (!removed) return RL_REMOVE_DIR;
  }
  return RL_DONE;
}

/* ---------- the interpreter's code as anonymous memory ---------- */

#define HUGE_PAGE_BYTES (2UL << 20)

struct vma {
  unsigned long start, end;
  int writable, executable, ours;
};

/* Copies the 2 MiB-aligned span around the executable's code (its code, and read-only data of its own on either side)
 * into anonymous memory at the same addresses, read and execute only: the same bytes where they were. Refuses (and
 * changes nothing) when the span holds anything else: another file's mapping, a gap, or a writable mapping. Returns
 * the bytes remapped, or a negative reason. Once, in the zygote, before it forks anything. */
long rl_huge_text(void) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = '\0';
  FILE *maps = fopen("/proc/self/maps", "re");
  if (maps == NULL) return -2;
  static struct vma vmas[512];
  int count = 0;
  unsigned long text_start = 0, text_end = 0;
  char line[8192];
  while (fgets(line, sizeof line, maps) != NULL && count < 512) {
    unsigned long start, end;
    char perms[8], path[4096] = "";
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %4095s", &start, &end, perms, path) < 3) continue;
    struct vma *v = &vmas[count++];
    *v = (struct vma){start, end, perms[1] == 'w', perms[2] == 'x', strcmp(path, exe) == 0};
    if (v->ours && v->executable && !v->writable && text_start == 0) {
      text_start = start;
      text_end = end;
    }
  }
  fclose(maps);
  if (text_start == 0) return -3;
  unsigned long span_start = text_start & ~(HUGE_PAGE_BYTES - 1);
  unsigned long span_end = (text_end + HUGE_PAGE_BYTES - 1) & ~(HUGE_PAGE_BYTES - 1);
  unsigned long covered = 0;
  for (int i = 0; i < count; i++) {
    struct vma *v = &vmas[i];
    if (v->end <= span_start || v->start >= span_end) continue;
    if (!v->ours || v->writable) return -4;
    covered += (v->end < span_end ? v->end : span_end) - (v->start > span_start ? v->start : span_start);
  }
  if (covered != span_end - span_start) return -5;
  size_t len = span_end - span_start;
  /* An aligned anonymous area (huge pages need 2 MiB alignment), filled, made read+execute, moved into place. */
  char *raw = mmap(NULL, len + HUGE_PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return -6;
  char *area = (char *)(((unsigned long)raw + HUGE_PAGE_BYTES - 1) & ~(HUGE_PAGE_BYTES - 1));
  if (area > raw) munmap(raw, (size_t)(area - raw));
  if (area + len < raw + len + HUGE_PAGE_BYTES) munmap(area + len, (size_t)(raw + len + HUGE_PAGE_BYTES - (area + len)));
  madvise(area, len, MADV_HUGEPAGE);
  memcpy(area, (const void *)span_start, len);
  if (mprotect(area, len, PROT_READ | PROT_EXEC) != 0) {
    munmap(area, len);
    return -7;
  }
  if (mremap(area, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)span_start) != (void *)span_start) {
    munmap(area, len);
    return -8;
  }
  return (long)len;
}
