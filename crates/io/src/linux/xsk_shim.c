// The AF_XDP socket of FromDevice/ToDevice METHOD XDP, over libxdp.
//
// libxdp (Debian's libxdp-dev) creates the UMEM and the socket, loads
// and attaches its default XDP program (the one that redirects a receive
// queue's frames to the socket bound to it), and provides the ring
// operations, which its header defines as inline functions. Rust cannot
// call inline C functions, so this file gathers them into a few batch
// calls (one per burst, never one per packet) that crates/io/src/linux/
// xdp.rs declares. No ring or BPF code of its own: only libxdp's.

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/if_xdp.h>
#include <xdp/xsk.h>
#include <xdp/libxdp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

// libxdp (and libbpf, its dependency) are opened (dlopen) when a router
// first opens an AF_XDP socket, not linked: a router without METHOD XDP
// maps neither them nor libelf and zlib behind them. The functions
// called through `lib` are these.
#define PCX_XDP_FUNCS(X)                                                    \
	X(libxdp_set_print)                                                 \
	X(libbpf_set_print)                                                 \
	X(libxdp_get_error)                                                 \
	X(xsk_umem__create)                                                 \
	X(xsk_umem__delete)                                                 \
	X(xsk_socket__create)                                               \
	X(xsk_socket__create_shared)                                        \
	X(xsk_socket__delete)                                               \
	X(xsk_socket__fd)                                                   \
	X(xdp_multiprog__get_from_ifindex)                                  \
	X(xdp_multiprog__attach_mode)                                       \
	X(xdp_multiprog__is_legacy)                                         \
	X(xdp_multiprog__main_prog)                                         \
	X(xdp_multiprog__next_prog)                                         \
	X(xdp_multiprog__close)                                             \
	X(xdp_multiprog__detach)                                            \
	X(xdp_program__id)                                                  \
	X(xsk_socket__update_xskmap)                                       \
	X(xdp_program__from_bpf_obj)                                       \
	X(xdp_program__attach)                                             \
	X(xdp_program__detach)                                             \
	X(xdp_program__close)                                              \
	X(xdp_program__bpf_obj)                                            \
	X(bpf_object__open_mem)                                            \
	X(libbpf_get_error)                                                \
	X(bpf_object__close)                                               \
	X(bpf_object__find_map_fd_by_name)                                 \
	X(bpf_map_update_elem)                                             \
	X(xdp_program__name)

static struct {
#define PCX_FIELD(f) __typeof__(f) *f;
	PCX_XDP_FUNCS(PCX_FIELD)
#undef PCX_FIELD
} lib;
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static int lib_err;
static char lib_msg[256];

static void lib_load(void)
{
	void *h = dlopen("libxdp.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(lib_msg, sizeof(lib_msg), "%s", dlerror());
		lib_err = -ELIBACC;
		return;
	}
#define PCX_SYM(f)                                                          \
	lib.f = (__typeof__(f) *)dlsym(h, #f);                              \
	if (!lib.f) {                                                       \
		snprintf(lib_msg, sizeof(lib_msg), "%s: no %s", "libxdp.so.1", \
			 #f);                                                \
		lib_err = -ELIBACC;                                         \
		return;                                                     \
	}
	PCX_XDP_FUNCS(PCX_SYM)
#undef PCX_SYM
}

// Opens libxdp once: 0, or -ELIBACC (pcx_xdp_load_error says why).
int pcx_xdp_load(void)
{
	pthread_once(&lib_once, lib_load);
	return lib_err;
}

// Why pcx_xdp_load failed ("" if it did not).
const char *pcx_xdp_load_error(void)
{
	return lib_msg;
}
#include <linux/if_link.h>

struct pcx_xsk {
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	struct xsk_ring_cons rx;
	struct xsk_ring_prod tx;
	int has_rx;
	int has_tx;
	int fd;
	// Busy polling is on (pcx_xsk_busy_poll): an empty receive ring
	// makes a `recvfrom`, which polls the queue's NAPI context.
	int busy;
};

// Silences libxdp's and libbpf's own messages (their notes on a missing
// bpffs or an ELF section they skip): the router reports what failed,
// with the errno they return.
void pcx_xdp_quiet(void)
{
	if (pcx_xdp_load())
		return;
	lib.libxdp_set_print(NULL);
	lib.libbpf_set_print(NULL);
}

// Creates the UMEM over `area` (`size` bytes of `frame_size`-byte
// frames), or with `share` (an open socket) joins that socket's UMEM
// (XDP_SHARED_UMEM: the bind mode, copy or zero-copy, and need-wakeup
// are the first socket's), and a socket on `ifname` queue `queue`, with
// its own fill and completion rings, a receive ring
// (`rx_size` entries, 0 for none) and a transmit ring (`tx_size`, 0 for
// none); the fill ring gets the `nfill` frames at `fill_addrs`. libxdp
// attaches its default program when the socket has a receive ring,
// unless `xsks_map` is a map's fd (>= 0): then the device's program is
// the PASS program (pcx_pass_attach), and the socket enters its map.
// Returns 0, or a negative errno with *out unset.
int pcx_xsk_open(struct pcx_xsk **out, struct pcx_xsk *share,
		 const char *ifname, unsigned queue, void *area, unsigned long long size, unsigned frame_size,
		 unsigned rx_size, unsigned tx_size, unsigned ring_size,
		 unsigned xdp_flags, unsigned bind_flags,
		 const unsigned long long *fill_addrs, unsigned nfill,
		 int xsks_map)
{
	int le = pcx_xdp_load();
	if (le)
		return le;
	struct pcx_xsk *x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	struct xsk_umem_config uc = {
		.fill_size = ring_size,
		.comp_size = ring_size,
		.frame_size = frame_size,
		.frame_headroom = 0,
		.flags = 0,
	};
	int err = 0;
	if (share) {
		x->umem = share->umem;
	} else {
		err = lib.xsk_umem__create(&x->umem, area, size, &x->fill, &x->comp, &uc);
		if (err) {
			free(x);
			return err < 0 ? err : -err;
		}
	}
	struct xsk_socket_config sc;
	memset(&sc, 0, sizeof(sc));
	sc.rx_size = rx_size ? rx_size : ring_size;
	sc.tx_size = tx_size ? tx_size : ring_size;
	sc.libxdp_flags = rx_size && xsks_map < 0 ? 0 : XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
	sc.xdp_flags = xdp_flags;
	sc.bind_flags = bind_flags;
	// A socket joining a UMEM gets fill and completion rings of its own
	// (one pair per device and queue, as the kernel requires).
	if (share)
		err = lib.xsk_socket__create_shared(&x->xsk, ifname, queue, x->umem,
						rx_size ? &x->rx : NULL,
						tx_size ? &x->tx : NULL, &x->fill,
						&x->comp, &sc);
	else
		err = lib.xsk_socket__create(&x->xsk, ifname, queue, x->umem,
					     rx_size ? &x->rx : NULL,
					     tx_size ? &x->tx : NULL, &sc);
	if (err) {
		if (!share)
			lib.xsk_umem__delete(x->umem);
		free(x);
		return err < 0 ? err : -err;
	}
	if (rx_size && xsks_map >= 0) {
		err = lib.xsk_socket__update_xskmap(x->xsk, xsks_map);
		if (err) {
			lib.xsk_socket__delete(x->xsk);
			// Frees the UMEM only when no other socket uses it.
			lib.xsk_umem__delete(x->umem);
			free(x);
			return err < 0 ? err : -err;
		}
	}
	x->has_rx = rx_size != 0;
	x->has_tx = tx_size != 0;
	x->fd = lib.xsk_socket__fd(x->xsk);
	if (nfill) {
		__u32 idx = 0;
		__u32 n = xsk_ring_prod__reserve(&x->fill, nfill, &idx);
		for (__u32 i = 0; i < n; i++)
			*xsk_ring_prod__fill_addr(&x->fill, idx + i) = fill_addrs[i];
		xsk_ring_prod__submit(&x->fill, n);
	}
	*out = x;
	return 0;
}

// Closes the socket; the UMEM goes with the last socket using it
// (xsk_umem__delete refuses, EBUSY, while others do). The caller
// serializes the opens and closes of one UMEM's sockets.
void pcx_xsk_close(struct pcx_xsk *x)
{
	if (!x)
		return;
	lib.xsk_socket__delete(x->xsk);
	lib.xsk_umem__delete(x->umem);
	free(x);
}

int pcx_xsk_fd(const struct pcx_xsk *x)
{
	return x->fd;
}

// Whether the socket is bound in zero-copy mode (XDP_OPTIONS).
int pcx_xsk_zerocopy(const struct pcx_xsk *x)
{
	struct xdp_options o;
	socklen_t len = sizeof(o);
	if (getsockopt(x->fd, SOL_XDP, XDP_OPTIONS, &o, &len))
		return 0;
	return (o.flags & XDP_OPTIONS_ZEROCOPY) != 0;
}

// Takes up to `max` received frames: their UMEM addresses and lengths.
// They stay the reader's until pcx_xsk_rx_done. With need-wakeup, an
// empty ring whose fill ring asks for it wakes the kernel up.
unsigned pcx_xsk_rx_peek(struct pcx_xsk *x, unsigned long long *addrs,
			 unsigned *lens, unsigned max)
{
	__u32 idx = 0;
	__u32 n = xsk_ring_cons__peek(&x->rx, max, &idx);
	for (__u32 i = 0; i < n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x->rx, idx + i);
		addrs[i] = d->addr;
		lens[i] = d->len;
	}
	if (n == 0 && (x->busy || xsk_ring_prod__needs_wakeup(&x->fill)))
		recvfrom(x->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
	return n;
}

// Releases the `n` descriptors the last peek took from the receive ring
// and puts the `nfill` frames at `addrs` on the fill ring for the kernel
// to fill, in one batch, waking the kernel if it asks. Returns how many
// frames went on the fill ring.
unsigned pcx_xsk_rx_done(struct pcx_xsk *x, unsigned n,
			 const unsigned long long *addrs, unsigned nfill)
{
	if (n)
		xsk_ring_cons__release(&x->rx, n);
	__u32 idx = 0;
	__u32 got = nfill ? xsk_ring_prod__reserve(&x->fill, nfill, &idx) : 0;
	for (__u32 i = 0; i < got; i++)
		*xsk_ring_prod__fill_addr(&x->fill, idx + i) = addrs[i];
	if (got)
		xsk_ring_prod__submit(&x->fill, got);
	if ((n || got) && xsk_ring_prod__needs_wakeup(&x->fill))
		recvfrom(x->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
	return got;
}

// Free entries of the transmit ring, up to `n`.
unsigned pcx_xsk_tx_room(struct pcx_xsk *x, unsigned n)
{
	return xsk_prod_nb_free(&x->tx, n);
}

// Takes up to `max` completed transmit frames' addresses (frames the
// kernel has sent and given back).
unsigned pcx_xsk_tx_reap(struct pcx_xsk *x, unsigned long long *addrs,
			 unsigned max)
{
	__u32 idx = 0;
	__u32 n = xsk_ring_cons__peek(&x->comp, max, &idx);
	for (__u32 i = 0; i < n; i++)
		addrs[i] = *xsk_ring_cons__comp_addr(&x->comp, idx + i);
	xsk_ring_cons__release(&x->comp, n);
	return n;
}

// Descriptors on the transmit ring the kernel has not taken yet.
unsigned pcx_xsk_tx_outstanding(struct pcx_xsk *x)
{
	return x->tx.size - xsk_prod_nb_free(&x->tx, x->tx.size);
}

// Wakes the kernel up to send what the transmit ring holds, if it asks
// for it (need-wakeup; in copy mode it always does): one `sendto`, which
// sends up to the kernel's per-call budget (32 frames unless raised) and
// returns EAGAIN when more are left. Returns 0, EAGAIN when frames are
// left on the ring, or the errno of a failed wake-up.
int pcx_xsk_tx_kick(struct pcx_xsk *x)
{
	if (!xsk_ring_prod__needs_wakeup(&x->tx))
		return 0;
	if (sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0)
		return 0;
	if (errno == EAGAIN || errno == EBUSY || errno == ENOBUFS)
		return EAGAIN;
	return errno == EINTR ? 0 : errno;
}

// XDP_MAX_TX_SKB_BUDGET, the socket option that sets how many frames
// one wake-up (`sendto`) sends at most in copy mode (the kernel's default
// is 32). Linux 6.17 added it; Debian's linux/if_xdp.h does not define it
// yet: the value is the kernel's (include/uapi/linux/if_xdp.h).
#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET 9
#endif

// Sets the socket's transmit budget per wake-up to `budget` frames (the
// kernel takes 32 up to the transmit ring's size). Returns 0, or the
// errno: ENOPROTOOPT from a kernel without the option, EACCES for a
// budget out of range or a socket without a transmit ring.
int pcx_xsk_set_tx_budget(struct pcx_xsk *x, unsigned budget)
{
	if (setsockopt(x->fd, SOL_XDP, XDP_MAX_TX_SKB_BUDGET, &budget,
		       sizeof(budget)))
		return errno;
	return 0;
}

// Preferred busy polling (the kernel's Documentation/networking/
// napi.rst): the socket's `recvfrom` and `sendto` run the receive queue's
// NAPI poll in the caller, `usecs` at most, up to `budget` frames a poll,
// and with the device's napi_defer_hard_irqs and gro_flush_timeout set
// the kernel leaves the queue to them instead of its softirq. From then
// on an empty receive ring makes a `recvfrom`. Returns 0 or the errno of
// the option the kernel refused.
int pcx_xsk_busy_poll(struct pcx_xsk *x, int usecs, int budget)
{
	int on = 1;
	if (setsockopt(x->fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &on, sizeof(on)))
		return errno;
	if (setsockopt(x->fd, SOL_SOCKET, SO_BUSY_POLL, &usecs, sizeof(usecs)))
		return errno;
	if (setsockopt(x->fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget, sizeof(budget)))
		return errno;
	x->busy = 1;
	return 0;
}

// Puts up to `n` frames (UMEM addresses and lengths) on the transmit
// ring, in order, without waking the kernel up (pcx_xsk_tx_kick does).
// Returns how many went on the ring.
unsigned pcx_xsk_tx_put(struct pcx_xsk *x, const unsigned long long *addrs,
			const unsigned *lens, unsigned n)
{
	__u32 idx = 0;
	__u32 got = xsk_ring_prod__reserve(&x->tx, n, &idx);
	for (__u32 i = 0; i < got; i++) {
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx + i);
		d->addr = addrs[i];
		d->len = lens[i];
		d->options = 0;
	}
	xsk_ring_prod__submit(&x->tx, got);
	return got;
}

// The socket's statistics (XDP_STATISTICS): frames dropped for want of
// a fill ring entry or receive ring room, and bad descriptors.
int pcx_xsk_stats(const struct pcx_xsk *x, unsigned long long *rx_dropped,
		  unsigned long long *rx_full, unsigned long long *fill_empty,
		  unsigned long long *tx_invalid)
{
	struct xdp_statistics s;
	socklen_t len = sizeof(s);
	memset(&s, 0, sizeof(s));
	if (getsockopt(x->fd, SOL_XDP, XDP_STATISTICS, &s, &len))
		return -errno;
	*rx_dropped = s.rx_dropped + s.rx_invalid_descs;
	*rx_full = s.rx_ring_full;
	*fill_empty = s.rx_fill_ring_empty_descs;
	*tx_invalid = s.tx_invalid_descs;
	return 0;
}

// The XDP programs attached to `ifindex`: writes up to `max` program ids
// and names (`names`: max × 64 bytes) and the attach mode; returns how
// many, 0 for none, or a negative errno.
int pcx_xdp_programs(int ifindex, unsigned *ids, char *names, int max,
		     int *mode)
{
	int le = pcx_xdp_load();
	if (le)
		return le;
	struct xdp_multiprog *mp = lib.xdp_multiprog__get_from_ifindex(ifindex);
	long e = lib.libxdp_get_error(mp);
	if (e)
		return e < 0 ? (int)e : -(int)e;
	if (!mp)
		return 0;
	*mode = lib.xdp_multiprog__attach_mode(mp);
	int n = 0;
	if (lib.xdp_multiprog__is_legacy(mp)) {
		struct xdp_program *p = lib.xdp_multiprog__main_prog(mp);
		if (p && n < max) {
			ids[n] = lib.xdp_program__id(p);
			strncpy(names + 64 * n, lib.xdp_program__name(p), 63);
			n++;
		}
	} else {
		for (struct xdp_program *p = lib.xdp_multiprog__next_prog(NULL, mp);
		     p && n < max; p = lib.xdp_multiprog__next_prog(p, mp)) {
			ids[n] = lib.xdp_program__id(p);
			strncpy(names + 64 * n, lib.xdp_program__name(p), 63);
			n++;
		}
	}
	lib.xdp_multiprog__close(mp);
	return n;
}

// Detaches every XDP program from `ifindex` (libxdp's dispatcher and the
// programs in it, or a program attached alone). Returns 0 or a negative
// errno.
int pcx_xdp_detach_all(int ifindex)
{
	int le = pcx_xdp_load();
	if (le)
		return le;
	struct xdp_multiprog *mp = lib.xdp_multiprog__get_from_ifindex(ifindex);
	long e = lib.libxdp_get_error(mp);
	if (e)
		return e < 0 ? (int)e : -(int)e;
	if (!mp)
		return 0;
	int err = lib.xdp_multiprog__detach(mp);
	lib.xdp_multiprog__close(mp);
	return err;
}

// The PASS program (xdp_pass.bpf.c) attached to a device.
struct pcx_pass {
	struct bpf_object *obj;
	struct xdp_program *prog;
	int ifindex;
	enum xdp_attach_mode mode;
};

// Opens the PASS program from its ELF image (`elf`, `len` bytes, built
// by build.rs), attaches it to `ifindex` in the mode of `xdp_flags`
// (libxdp's dispatcher where it can, alone otherwise), and writes the
// `nrules` rules of `rule_size` bytes at `rules` into its rule map.
// *xsks_map gets the fd of its socket map. Returns 0, or a negative
// errno with *out unset and nothing attached.
int pcx_pass_attach(struct pcx_pass **out, const void *elf, unsigned long len,
		    int ifindex, unsigned xdp_flags, const void *rules,
		    unsigned nrules, unsigned rule_size, int *xsks_map)
{
	int le = pcx_xdp_load();
	if (le)
		return le;
	struct pcx_pass *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "pcx_xsk_pass");
	p->obj = lib.bpf_object__open_mem(elf, len, &oo);
	long e = lib.libbpf_get_error(p->obj);
	if (e) {
		free(p);
		return e < 0 ? (int)e : -(int)e;
	}
	p->prog = lib.xdp_program__from_bpf_obj(p->obj, "xdp");
	e = lib.libxdp_get_error(p->prog);
	if (e) {
		lib.bpf_object__close(p->obj);
		free(p);
		return e < 0 ? (int)e : -(int)e;
	}
	p->ifindex = ifindex;
	p->mode = (xdp_flags & XDP_FLAGS_SKB_MODE) ? XDP_MODE_SKB : XDP_MODE_NATIVE;
	int err = lib.xdp_program__attach(p->prog, ifindex, p->mode, 0);
	if (err) {
		lib.xdp_program__close(p->prog);
		lib.bpf_object__close(p->obj);
		free(p);
		return err < 0 ? err : -err;
	}
	struct bpf_object *o = lib.xdp_program__bpf_obj(p->prog);
	int rfd = lib.bpf_object__find_map_fd_by_name(o, "pass_rules");
	*xsks_map = lib.bpf_object__find_map_fd_by_name(o, "xsks_map");
	err = (rfd < 0 || *xsks_map < 0) ? -ENOENT : 0;
	for (unsigned i = 0; !err && i < nrules; i++) {
		if (lib.bpf_map_update_elem(rfd, &i, (const char *)rules + i * rule_size, 0))
			err = -errno;
	}
	if (err) {
		lib.xdp_program__detach(p->prog, ifindex, p->mode, 0);
		lib.xdp_program__close(p->prog);
		lib.bpf_object__close(p->obj);
		free(p);
		return err;
	}
	*out = p;
	return 0;
}

// Detaches and closes the PASS program.
void pcx_pass_close(struct pcx_pass *p)
{
	if (!p)
		return;
	lib.xdp_program__detach(p->prog, p->ifindex, p->mode, 0);
	lib.xdp_program__close(p->prog);
	lib.bpf_object__close(p->obj);
	free(p);
}
