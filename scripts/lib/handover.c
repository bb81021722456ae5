// How long a cache line takes to go from one CPU to another: two threads,
// pinned to CPU A and CPU B, hand a counter back and forth through one
// shared cache line; each hand-over is one transfer of the line. Printed
// by the veth scripts (scripts/device-terms.sh,
// scripts/validate-model-veth.sh) next to their terms: the receive and
// transmit paths there pass every packet's ring slot or descriptor from
// the generator's CPU to the router's and back, so their cost follows this
// figure. On this 2-CPU VM it moved between about 60 ns and about 200 ns
// within minutes, load or no load (the host's placement of the two
// virtual CPUs), and the receive term with it (docs/MODEL.md).
//
// Usage: handover CPU_A CPU_B [HANDOVERS [ROUNDS]]
//   (defaults 200000 and 5); run it under a real-time policy (chrt -f)
//   on a loaded machine, or a thread preempted mid-round inflates that
//   round. Prints the median over ROUNDS of the ns per one-way hand-over,
//   then the rounds' minimum and maximum: "MEDIAN MIN MAX".
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Alignas(64) atomic_long counter;
static long handovers;

static int pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

struct peer {
  int cpu;
  int rounds;
  int err;
  // 1 once the peer is pinned (or failed to be: err), before any round.
  atomic_int ready;
};

// The other side: takes each odd value and answers with the next one.
static void *answer(void *arg) {
  struct peer *p = arg;
  p->err = pin(p->cpu);
  atomic_store_explicit(&p->ready, 1, memory_order_release);
  if (p->err)
    return NULL;
  for (int r = 0; r < p->rounds; r++) {
    long base = (long)r * (handovers + 2);
    for (long i = base + 1; i <= base + handovers; i += 2) {
      while (atomic_load_explicit(&counter, memory_order_acquire) != i)
        ;
      atomic_store_explicit(&counter, i + 1, memory_order_release);
    }
  }
  return NULL;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: handover CPU_A CPU_B [HANDOVERS [ROUNDS]]\n");
    return 2;
  }
  int a = atoi(argv[1]);
  struct peer p = {.cpu = atoi(argv[2]), .rounds = argc > 4 ? atoi(argv[4]) : 5};
  handovers = argc > 3 ? atol(argv[3]) : 200000;
  if (handovers < 2 || p.rounds < 1 || p.rounds > 1000) {
    fprintf(stderr, "handover: HANDOVERS must be at least 2, ROUNDS 1 to 1000\n");
    return 2;
  }
  handovers -= handovers % 2;
  // The peer first, while this thread may still run anywhere: under a
  // real-time policy a new thread on this thread's CPU would wait behind
  // its spin forever, before it could move to its own.
  pthread_t t;
  int e = pthread_create(&t, NULL, answer, &p);
  if (e) {
    fprintf(stderr, "handover: pthread_create: %s\n", strerror(e));
    return 1;
  }
  while (!atomic_load_explicit(&p.ready, memory_order_acquire))
    sched_yield();
  if (p.err) {
    fprintf(stderr, "handover: cannot pin to CPU %d: %s\n", p.cpu, strerror(p.err));
    return 1;
  }
  e = pin(a);
  if (e) {
    // The peer waits for the first hand-over: end the process here.
    fprintf(stderr, "handover: cannot pin to CPU %d: %s\n", a, strerror(e));
    return 1;
  }
  double ns[1000];
  for (int r = 0; r < p.rounds; r++) {
    long base = (long)r * (handovers + 2);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = base; i < base + handovers; i += 2) {
      atomic_store_explicit(&counter, i + 1, memory_order_release);
      while (atomic_load_explicit(&counter, memory_order_acquire) != i + 2)
        ;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ns[r] = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / handovers;
  }
  pthread_join(t, NULL);
  qsort(ns, p.rounds, sizeof ns[0], cmp);
  printf("%.1f %.1f %.1f\n", ns[p.rounds / 2], ns[0], ns[p.rounds - 1]);
  return 0;
}
