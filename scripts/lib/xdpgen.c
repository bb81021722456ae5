// The veth benchmarks' packet generator (scripts/lib/veth.sh, GEN=xdp).
// It sends small UDP frames (60 bytes IPv4, 62 bytes IPv6, one new flow
// per packet) at a set rate out of an interface, generated in the kernel:
// BPF_PROG_RUN in live-frames mode (BPF_F_TEST_XDP_LIVE_FRAMES, Linux
// 5.18) runs xdpgen.bpf.c over and over on a template frame; the program
// paces (a frame not yet due is dropped, i.e. recycled) and transmits the
// due ones (XDP_TX, which the kernel turns into a redirect to the
// interface the run names). No socket buffer is made on the sending side:
// a veth peer receives the frames in its NAPI poll, so the peer needs
// NAPI (GRO on, or an XDP program attached).
//
// Why not xdp-trafficgen (xdp-tools 1.3): it sends IPv6 only, with hop
// limit 1, so its frames cannot be routed, and it has no rate. Why one
// long run per thread: each BPF_PROG_RUN call ends with a page-pool
// teardown that waits for an RCU grace period (7-40 ms measured here), so
// runs of a few packets on a schedule cannot reach even 100 kpps.
//
// Usage: xdpgen BPF_OBJECT IFNAME SRC_MAC DST_MAC SRC_IP DST_IP RATE COUNT CPUS
//   RATE packets/s in all (0: as fast as it can), COUNT packets in all;
//   CPUS a comma-separated list of distinct CPUs: one sending thread
//   pinned to each, sending RATE/threads. A sending thread spins (its CPU
//   is busy whatever the rate); the kernel's batch loop yields it to any
//   other runnable thread of its CPU (cond_resched), which CFS then shares
//   fairly. Frames go out in the kernel's batches of 64 runs.
// Prints: "sent N seconds S rate R cpu C": packets sent, wall seconds from
// the first sent to the last (to 1 ms), their rate, and the
// generator's CPU seconds (user + system, which includes the receiving
// veth's NAPI work its batches set off on the sending CPU).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>

struct gen_cfg {
  uint32_t udp_off, flows, base, partial;
  uint8_t frame[64];
};

struct gen_state {
  uint64_t next, interval, sent, limit;
};

static int prog_fd, ifindex;
static uint8_t frame[128];
static uint32_t frame_len;
static volatile int stop;

struct worker {
  pthread_t tid;
  int cpu;
  int err;
};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void on_signal(int sig) { (void)sig; }

static void *run(void *arg) {
  struct worker *w = arg;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(w->cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set)) {
    w->err = EINVAL;
    return NULL;
  }
  struct xdp_md ctx = {.data_end = frame_len, .ingress_ifindex = ifindex};
  while (!stop) {
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = frame_len,
                .ctx_in = &ctx, .ctx_size_in = sizeof ctx, .repeat = 1 << 30,
                .flags = BPF_F_TEST_XDP_LIVE_FRAMES, .batch_size = 64);
    if (bpf_prog_test_run_opts(prog_fd, &opts) && errno != EINTR) {
      w->err = errno;
      return NULL;
    }
  }
  return NULL;
}

static uint32_t sum16(const uint8_t *p, size_t n) {
  uint32_t s = 0;
  for (size_t i = 0; i + 1 < n; i += 2)
    s += (uint32_t)p[i] << 8 | p[i + 1];
  if (n & 1)
    s += (uint32_t)p[n - 1] << 8;
  return s;
}

static int mac(const char *s, uint8_t *m) {
  return sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) == 6
             ? 0
             : -1;
}

int main(int argc, char **argv) {
  if (argc != 10) {
    fprintf(stderr, "usage: xdpgen BPF_OBJECT IFNAME SRC_MAC DST_MAC SRC_IP DST_IP RATE COUNT CPUS\n");
    return 2;
  }
  ifindex = if_nametoindex(argv[2]);
  if (!ifindex) {
    fprintf(stderr, "xdpgen: no interface %s\n", argv[2]);
    return 2;
  }
  double rate = atof(argv[7]);
  uint64_t count = strtoull(argv[8], NULL, 10);
  int six = strchr(argv[5], ':') != NULL;
  uint8_t *e = frame;
  if (mac(argv[4], e) || mac(argv[3], e + 6)) {
    fprintf(stderr, "xdpgen: bad MAC address\n");
    return 2;
  }
  uint32_t udp_off, partial, base = 1024, flows = 16384;
  uint8_t *udp;
  if (six) {
    frame_len = 62;
    e[12] = 0x86, e[13] = 0xdd;
    uint8_t *ip = e + 14;
    ip[0] = 0x60;
    ip[4] = 0, ip[5] = 8; // payload length: the UDP header
    ip[6] = 17;
    ip[7] = 64;
    if (inet_pton(AF_INET6, argv[5], ip + 8) != 1 || inet_pton(AF_INET6, argv[6], ip + 24) != 1) {
      fprintf(stderr, "xdpgen: bad IPv6 address\n");
      return 2;
    }
    udp_off = 54;
    udp = e + udp_off;
    partial = sum16(ip + 8, 32) + 8 + 17;
  } else {
    frame_len = 60;
    e[12] = 0x08, e[13] = 0x00;
    uint8_t *ip = e + 14;
    ip[0] = 0x45;
    ip[3] = 46; // total length: 20 + 8 + 18
    ip[8] = 64;
    ip[9] = 17;
    if (inet_pton(AF_INET, argv[5], ip + 12) != 1 || inet_pton(AF_INET, argv[6], ip + 16) != 1) {
      fprintf(stderr, "xdpgen: bad IPv4 address\n");
      return 2;
    }
    uint32_t s = sum16(ip, 20);
    while (s >> 16)
      s = (s & 0xffff) + (s >> 16);
    ip[10] = (~s >> 8) & 0xff, ip[11] = ~s & 0xff;
    udp_off = 34;
    udp = e + udp_off;
    partial = sum16(ip + 12, 8) + 17 + 26;
  }
  uint32_t ulen = frame_len - udp_off;
  udp[0] = base >> 8, udp[1] = base & 0xff;
  udp[2] = 0, udp[3] = 9; // discard port
  udp[4] = ulen >> 8, udp[5] = ulen & 0xff;
  // Everything the checksum covers but the source port and the checksum.
  partial += sum16(udp + 2, ulen - 2) - (udp[6] << 8 | udp[7]);
  while (partial >> 16)
    partial = (partial & 0xffff) + (partial >> 16);

  libbpf_set_print(NULL);
  struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
  if (!obj || bpf_object__load(obj)) {
    fprintf(stderr, "xdpgen: cannot load %s: %s\n", argv[1], strerror(errno));
    return 1;
  }
  prog_fd = bpf_program__fd(bpf_object__find_program_by_name(obj, "xdpgen"));
  struct gen_cfg c = {udp_off, flows, base, partial, {0}};
  memcpy(c.frame, frame, 60);
  uint32_t k = 0;
  if (bpf_map_update_elem(bpf_object__find_map_fd_by_name(obj, "cfg"), &k, &c, 0)) {
    fprintf(stderr, "xdpgen: cannot configure: %s\n", strerror(errno));
    return 1;
  }

  struct worker ws[64];
  int nw = 0;
  for (char *tok = strtok(argv[9], ","); tok && nw < 64; tok = strtok(NULL, ","))
    ws[nw++] = (struct worker){.cpu = atoi(tok)};
  int ncpu = libbpf_num_possible_cpus();
  if (!nw || ncpu <= 0) {
    fprintf(stderr, "xdpgen: no CPUs\n");
    return 2;
  }
  struct gen_state *st = calloc(ncpu, sizeof *st);
  for (int i = 0; i < nw; i++) {
    if (ws[i].cpu < 0 || ws[i].cpu >= ncpu) {
      fprintf(stderr, "xdpgen: no CPU %d\n", ws[i].cpu);
      return 2;
    }
    st[ws[i].cpu].interval = rate > 0 ? (uint64_t)(1e9 * nw / rate) : 0;
    st[ws[i].cpu].limit = count / nw + (i < (int)(count % nw));
  }
  int state_fd = bpf_object__find_map_fd_by_name(obj, "state");
  if (bpf_map_update_elem(state_fd, &k, st, 0)) {
    fprintf(stderr, "xdpgen: cannot set the pacing: %s\n", strerror(errno));
    return 1;
  }
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGUSR1, &sa, NULL);
  double t0 = now(), t1 = t0;
  for (int i = 0; i < nw; i++)
    pthread_create(&ws[i].tid, NULL, run, &ws[i]);
  // (After the senders start: they inherit this thread's priority.)
  // Under SCHED_FIFO (chrt), sending threads that spin on every CPU would
  // keep this thread, which counts and stops them, from ever running: it
  // takes the highest priority (it runs for microseconds a millisecond).
  if (sched_getscheduler(0) == SCHED_FIFO) {
    struct sched_param sp = {.sched_priority = sched_get_priority_max(SCHED_FIFO)};
    pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
  }
  // Until every thread has sent its share (or one failed): the count is
  // read every millisecond.
  // The rate is taken from the first count seen above zero: starting a
  // run (its page pool) takes tens of milliseconds, more with two.
  uint64_t sent = 0, first = 0;
  for (;;) {
    usleep(1000);
    if (bpf_map_lookup_elem(state_fd, &k, st))
      break;
    sent = 0;
    for (int c = 0; c < ncpu; c++)
      sent += st[c].sent;
    t1 = now();
    if (!first && sent) {
      first = sent;
      t0 = t1;
    }
    int failed = 0;
    for (int i = 0; i < nw; i++)
      failed |= ws[i].err != 0;
    if (sent >= count || failed)
      break;
  }
  stop = 1;
  for (int i = 0; i < nw; i++)
    pthread_kill(ws[i].tid, SIGUSR1);
  int err = 0;
  for (int i = 0; i < nw; i++) {
    // A thread may have been between runs when the signal came.
    while (pthread_tryjoin_np(ws[i].tid, NULL) == EBUSY) {
      pthread_kill(ws[i].tid, SIGUSR1);
      usleep(1000);
    }
    if (ws[i].err)
      err = ws[i].err;
  }
  double secs = t1 - t0;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
               ru.ru_stime.tv_usec * 1e-6;
  printf("sent %llu seconds %.6f rate %.0f cpu %.6f\n", (unsigned long long)sent, secs,
         secs > 0 ? (sent - first) / secs : 0, cpu);
  if (err) {
    fprintf(stderr, "xdpgen: BPF_PROG_RUN: %s\n", strerror(err));
    return 1;
  }
  return 0;
}
