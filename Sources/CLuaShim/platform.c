// What the watchdog needs from the operating system, in one file: the clock
// deadlines are measured on, a thread's CPU clock (what a call's time is counted on),
// a wait on a condition variable until a time on that clock, and the signal that
// interrupts a thread running Lua; and the size of the C heap, which the benches and tests
// that watch a long run's memory read. Linux has each
// directly; other POSIX systems (Darwin) get the portable forms below, which
// scripts/check-portable builds and runs on Linux too. Calls no other file.
#include "internal.h"
#include <signal.h>
#include <time.h>
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>
#define MF_MALLINFO2 1
#endif

#if defined(__linux__) && !defined(MF_PORTABLE_PLATFORM)
#define MF_LINUX 1
#endif

int64_t mf_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void mf_platform_cond_init(pthread_cond_t *cond) {
#if MF_LINUX
  // Waits measured on the monotonic clock: a change of the wall clock moves no deadline.
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(cond, &attr);
  pthread_condattr_destroy(&attr);
#else
  pthread_cond_init(cond, NULL);
#endif
}

void mf_platform_cond_wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, int64_t deadline_ns) {
#if MF_LINUX
  struct timespec ts = { (time_t)(deadline_ns / 1000000000), (long)(deadline_ns % 1000000000) };
#else
  // The condition variable waits on the wall clock: the time left is added to the
  // wall clock's now (a wall-clock jump can only wake it early or late, and the
  // watchdog looks at the monotonic clock again when it wakes).
  int64_t left = deadline_ns - mf_now_ns();
  if (left < 0) left = 0;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t until = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec + left;
  struct timespec ts = { (time_t)(until / 1000000000), (long)(until % 1000000000) };
#endif
  pthread_cond_timedwait(cond, lock, &ts);
}

int mf_platform_thread_cpu_clock(clockid_t *clock) {
#if MF_LINUX
  return pthread_getcpuclockid(pthread_self(), clock) == 0;
#else
  (void)clock;
  return 0;  // no CPU clock of a thread another can read: calls are timed on the wall clock
#endif
}

int64_t mf_platform_cpu_ns(clockid_t clock) {
  struct timespec ts;
  if (clock_gettime(clock, &ts) != 0) return -1;
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int mf_platform_stop_signal(void) {
#if MF_LINUX
  // A real-time signal nobody else uses.
  return SIGRTMIN + 7;
#else
  // No real-time signals: SIGUSR2, which an app that embeds Moonflow must leave to it.
  return SIGUSR2;
#endif
}

int64_t mf_heap_in_use(void) {
#if MF_MALLINFO2
  // What malloc has handed out and not had back: its arenas' blocks and the mapped ones.
  struct mallinfo2 info = mallinfo2();
  return (int64_t)(info.uordblks + info.hblkhd);
#else
  return -1;
#endif
}
