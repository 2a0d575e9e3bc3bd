/*
 * sluice's DPDK shim: the few DPDK calls the driver needs, as plain functions. DPDK's burst
 * functions and mbuf helpers are inline in its headers, so Rust reaches them through here;
 * every struct DPDK defines stays on this side, and Rust sees only buffer slots, offsets
 * and lengths.
 *
 * Zero copy, VPP's way: an mbuf lives inside each sluice buffer slot, in its headroom:
 *
 *   slot + 0          DPDK's mempool object header's place (64 bytes, never written)
 *   slot + 64         struct rte_mbuf (128 bytes)
 *   slot + 192        the mbuf's buffer (buf_addr): 128 bytes of DPDK headroom, then data
 *   slot + 2304       the next slot
 *
 * A frame a PMD receives starts at slot + 320 (buf_addr + RTE_PKTMBUF_HEADROOM), with 1984
 * bytes of room (longer frames become chains); the buffer the NIC filled is the buffer the
 * graph reads and the buffer sent. Each slot is one mempool object exactly as DPDK would lay
 * it out (object header, then the object, no padding: stride 2304 = 64 + elt_size), and each
 * pool's memory list names the whole buffer region as its one chunk, so a PMD that derives
 * its memory from the pool's layout (net_af_xdp makes the region its AF_XDP UMEM) finds
 * sluice's buffers where it looks. The object header itself is never written: these pools
 * are not populated by DPDK and its debug checks are off in release builds of DPDK.
 *
 * The mempools handed to DPDK get and put those mbufs through sluice's allocator: the
 * "sluice" mempool ops call back into Rust (sluice_dpdk_stock_get/put), which keeps a stock
 * of buffers lent to DPDK per pool.
 */
#define _GNU_SOURCE
/* rte_dev_dma_map: experimental in 22.11. */
#define ALLOW_EXPERIMENTAL_API
#include <errno.h>
#include <stddef.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_thash.h>
#include <rte_version.h>

/* Where the mbuf sits in a slot: after the mempool object header DPDK expects before it. */
#define SD_MBUF_AT 64
#define SD_BURST 256

/* Rust's side of the pools (drivers/dpdk/stock.rs). */
extern int sluice_dpdk_stock_get(void *stock, uint32_t *slots, unsigned n);
extern void sluice_dpdk_stock_put(void *stock, const uint32_t *slots, unsigned n);
extern unsigned sluice_dpdk_stock_count(void *stock);

/*
 * sluice's buffer stride (buffer::STRIDE), a constant so that finding a slot from an mbuf's
 * address is a multiplication, not a division, on every packet.
 */
#define SD_STRIDE 2304u

static uint8_t *sd_base;
static uint32_t sd_count;

/* The buffer region, once, before any pool; -1 when sluice's stride is not SD_STRIDE. */
int sd_set_region(void *base, uint64_t stride, uint32_t count)
{
	if (stride != SD_STRIDE)
		return -1;
	sd_base = base;
	sd_count = count;
	return 0;
}

static inline struct rte_mbuf *mbuf_of(uint32_t slot)
{
	return (struct rte_mbuf *)(sd_base + (uint64_t)slot * SD_STRIDE + SD_MBUF_AT);
}

/* The slot an mbuf lives in, or UINT32_MAX for one outside the region or off its place. */
static inline uint32_t slot_of(const struct rte_mbuf *m)
{
	uint8_t *p = (uint8_t *)m;
	uint64_t at = (uint64_t)(p - sd_base - SD_MBUF_AT);
	if (at % SD_STRIDE != 0 || at / SD_STRIDE >= sd_count)
		return UINT32_MAX;
	return (uint32_t)(at / SD_STRIDE);
}

/*
 * An mbuf header as rte_pktmbuf_init and rte_pktmbuf_reset leave it, for pool `mp`: every
 * field a PMD or the mbuf library reads, stored one by one (cheaper than clearing both cache
 * lines; the dynamic fields are unused).
 */
static inline void mbuf_init(struct rte_mbuf *m, struct rte_mempool *mp)
{
	m->buf_addr = (uint8_t *)m + sizeof(*m);
	m->buf_iova = (rte_iova_t)(uintptr_t)m->buf_addr;
	m->data_off = RTE_PKTMBUF_HEADROOM;
	rte_mbuf_refcnt_set(m, 1);
	m->nb_segs = 1;
	m->port = RTE_MBUF_PORT_INVALID;
	m->ol_flags = 0;
	m->packet_type = 0;
	m->pkt_len = 0;
	m->data_len = 0;
	m->vlan_tci = 0;
	m->hash.rss = 0;
	m->vlan_tci_outer = 0;
	m->buf_len = (uint16_t)(SD_STRIDE - SD_MBUF_AT - sizeof(*m));
	m->pool = mp;
	m->next = NULL;
	m->tx_offload = 0;
	m->priv_size = 0;
	m->timesync = 0;
}

static int ops_alloc(struct rte_mempool *mp)
{
	mp->pool_data = mp->pool_config;
	return 0;
}

static void ops_free(struct rte_mempool *mp)
{
	(void)mp;
}

static int ops_enqueue(struct rte_mempool *mp, void *const *objs, unsigned n)
{
	uint32_t slots[SD_BURST];
	unsigned done = 0;
	while (done < n) {
		unsigned k = 0;
		for (; k < SD_BURST && done + k < n; k++)
			slots[k] = slot_of(objs[done + k]);
		sluice_dpdk_stock_put(mp->pool_data, slots, k);
		done += k;
	}
	return 0;
}

/*
 * All or nothing, as DPDK asks of a dequeue. The headers are ready: a buffer enters a stock
 * either from sluice (sd_mbuf_prepare wrote its header) or freed by a PMD, which leaves it
 * as rte_mbuf_raw_alloc expects (refcnt 1, one segment, no next).
 */
static int ops_dequeue(struct rte_mempool *mp, void **objs, unsigned n)
{
	uint32_t slots[SD_BURST];
	unsigned done = 0;
	while (done < n) {
		unsigned k = RTE_MIN((unsigned)SD_BURST, n - done);
		if (sluice_dpdk_stock_get(mp->pool_data, slots, k) != 0) {
			/* Give back what this call took before failing. */
			ops_enqueue(mp, objs, done);
			return -ENOBUFS;
		}
		for (unsigned i = 0; i < k; i++)
			objs[done + i] = mbuf_of(slots[i]);
		done += k;
	}
	return 0;
}

/* Write the mbuf headers of sluice buffers about to be lent to pool `mp`'s stock. */
void sd_mbuf_prepare(struct rte_mempool *mp, const uint32_t *slots, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		mbuf_init(mbuf_of(slots[i]), mp);
}

static unsigned ops_get_count(const struct rte_mempool *mp)
{
	return sluice_dpdk_stock_count(mp->pool_data);
}

static struct rte_mempool_ops sd_ops = {
	.name = "sluice",
	.alloc = ops_alloc,
	.free = ops_free,
	.enqueue = ops_enqueue,
	.dequeue = ops_dequeue,
	.get_count = ops_get_count,
};

static void say(char *err, size_t len, const char *what, int rc)
{
	snprintf(err, len, "%s: %s", what, rte_strerror(rc < 0 ? -rc : rc));
}

/*
 * EAL start-up with `argv`. EAL pins the calling thread to its main lcore; sluice places its
 * own threads, so the thread's CPU set is put back afterwards.
 */
int sd_eal_init(int argc, char **argv, char *err, size_t len)
{
	cpu_set_t saved;
	int have = sched_getaffinity(0, sizeof(saved), &saved) == 0;
	if (rte_mempool_register_ops(&sd_ops) < 0) {
		say(err, len, "registering sluice's mempool ops", rte_errno);
		return -1;
	}
	int rc = rte_eal_init(argc, argv);
	if (have)
		sched_setaffinity(0, sizeof(saved), &saved);
	if (rc < 0) {
		say(err, len, "rte_eal_init", rte_errno);
		return -1;
	}
	return 0;
}

/* Where EAL made its runtime directory (left empty with --in-memory or --no-shconf). */
const char *sd_runtime_dir(void)
{
	return rte_eal_get_runtime_dir();
}

const char *sd_version(void)
{
	return rte_version();
}

/* Give the calling thread an lcore id, so mempool caches serve it (no pinning). */
int sd_thread_register(void)
{
	if (rte_lcore_id() != LCORE_ID_ANY)
		return 0;
	return rte_thread_register();
}

void sd_thread_unregister(void)
{
	rte_thread_unregister();
}

/*
 * A mempool of `n` sluice buffers whose gets and puts go to `stock`. No padding between
 * objects (RTE_MEMPOOL_F_NO_SPREAD): DPDK's object size is then exactly the stride. The memory
 * list holds one chunk, the whole region, and populated_size counts every slot in it: the
 * stock may lend any of them, and net_af_xdp sizes its UMEM as populated_size objects from
 * the first chunk's start.
 */
struct rte_mempool *sd_pool_create(const char *name, unsigned n, unsigned cache, void *stock,
				   char *err, size_t len)
{
	unsigned elt = (unsigned)(SD_STRIDE - SD_MBUF_AT);
	struct rte_mempool *mp =
		rte_mempool_create_empty(name, n, elt, cache, sizeof(struct rte_pktmbuf_pool_private),
					 SOCKET_ID_ANY, RTE_MEMPOOL_F_NO_SPREAD);
	if (mp == NULL) {
		say(err, len, "rte_mempool_create_empty", rte_errno);
		return NULL;
	}
	if (mp->header_size != SD_MBUF_AT || mp->header_size + mp->elt_size + mp->trailer_size !=
						     SD_STRIDE) {
		snprintf(err, len, "DPDK lays a mempool object out as %u + %u + %u bytes, not %u",
			 mp->header_size, mp->elt_size, mp->trailer_size, SD_STRIDE);
		rte_mempool_free(mp);
		return NULL;
	}
	int rc = rte_mempool_set_ops_byname(mp, "sluice", stock);
	if (rc != 0) {
		say(err, len, "rte_mempool_set_ops_byname", rc);
		rte_mempool_free(mp);
		return NULL;
	}
	/* rte_mempool_free releases it with rte_free. */
	struct rte_mempool_memhdr *chunk = rte_zmalloc(NULL, sizeof(*chunk), 0);
	if (chunk == NULL) {
		say(err, len, "rte_zmalloc", ENOMEM);
		rte_mempool_free(mp);
		return NULL;
	}
	chunk->mp = mp;
	chunk->addr = sd_base;
	chunk->iova = (rte_iova_t)(uintptr_t)sd_base; /* IOVA as VA, as buf_iova */
	chunk->len = (size_t)sd_count * SD_STRIDE;
	STAILQ_INSERT_TAIL(&mp->mem_list, chunk, next);
	mp->nb_mem_chunks = 1;
	mp->pool_data = stock;
	struct rte_pktmbuf_pool_private priv = {
		.mbuf_data_room_size = (uint16_t)(elt - sizeof(struct rte_mbuf)),
		.mbuf_priv_size = 0,
	};
	rte_pktmbuf_pool_init(mp, &priv);
	mp->populated_size = sd_count;
	mp->flags &= ~RTE_MEMPOOL_F_NON_IO;
	return mp;
}

/* Return what the lcore caches of `mp` hold to its stock (the threads are stopped). */
void sd_pool_flush(struct rte_mempool *mp)
{
	for (unsigned l = 0; l < RTE_MAX_LCORE; l++) {
		struct rte_mempool_cache *c = rte_mempool_default_cache(mp, l);
		if (c != NULL && c->len > 0)
			rte_mempool_cache_flush(c, mp);
	}
}

void sd_pool_free(struct rte_mempool *mp)
{
	rte_mempool_free(mp);
}

int sd_port_find(const char *name, uint16_t *port)
{
	return rte_eth_dev_get_port_by_name(name, port);
}

/* Probe a device after start-up (`rte_dev_probe`): a vdev or a PCI address. */
int sd_dev_probe(const char *devargs, char *err, size_t len)
{
	int rc = rte_dev_probe(devargs);
	if (rc < 0) {
		say(err, len, "rte_dev_probe", rc);
		return -1;
	}
	return 0;
}

/*
 * Let the port's device DMA into sluice's buffers: the region registered as external memory
 * (once) and mapped for the device with IOVA = VA. Returns 0 when mapped, 1 when the device's
 * bus has no DMA mapping (virtual devices: nothing to map), -1 on an error.
 */
int sd_port_dma_map(uint16_t port, void *addr, uint64_t len, uint64_t page_sz, char *err,
		    size_t elen)
{
	static int registered;
	if (!registered) {
		if (rte_extmem_register(addr, len, NULL, 0, page_sz) != 0 && rte_errno != EEXIST) {
			say(err, elen, "rte_extmem_register", rte_errno);
			return -1;
		}
		registered = 1;
	}
	struct rte_eth_dev_info info;
	int rc = rte_eth_dev_info_get(port, &info);
	if (rc != 0) {
		say(err, elen, "rte_eth_dev_info_get", rc);
		return -1;
	}
	if (rte_dev_dma_map(info.device, addr, (uint64_t)(uintptr_t)addr, len) == 0)
		return 0;
	if (rte_errno == ENOTSUP)
		return 1;
	say(err, elen, "rte_dev_dma_map", rte_errno);
	return -1;
}

struct sd_port_conf {
	uint16_t rx_queues;
	uint16_t tx_queues;
	uint16_t rx_desc;
	uint16_t tx_desc;
	uint32_t mtu;
	int promisc;
	const uint8_t *rss_key;
	uint8_t rss_key_len;
};

/* What sluice shows of a port: `show hardware`. */
struct sd_port_info {
	char driver[64];
	uint16_t max_rx_queues;
	uint16_t max_tx_queues;
	uint64_t rx_offload_capa;
	uint64_t tx_offload_capa;
	uint64_t rss_hf;
	uint8_t rss_key_len;
	uint8_t mac[6];
	uint32_t max_mtu;
};

int sd_port_info(uint16_t port, struct sd_port_info *out)
{
	struct rte_eth_dev_info info;
	int rc = rte_eth_dev_info_get(port, &info);
	if (rc != 0)
		return rc;
	memset(out, 0, sizeof(*out));
	snprintf(out->driver, sizeof(out->driver), "%s", info.driver_name ? info.driver_name : "?");
	out->max_rx_queues = info.max_rx_queues;
	out->max_tx_queues = info.max_tx_queues;
	out->rx_offload_capa = info.rx_offload_capa;
	out->tx_offload_capa = info.tx_offload_capa;
	out->rss_hf = info.flow_type_rss_offloads;
	out->rss_key_len = info.hash_key_size;
	out->max_mtu = info.max_mtu;
	struct rte_ether_addr mac;
	if (rte_eth_macaddr_get(port, &mac) == 0)
		memcpy(out->mac, mac.addr_bytes, 6);
	return 0;
}

/*
 * Configure and start a port: `c->rx_queues` receive queues, each filled from pools[q],
 * `c->tx_queues` transmit queues; no LRO, no TSO, no VLAN offloads (a router rewrites every
 * header); RSS over IP addresses and ports when the port has more than one receive queue.
 */
int sd_port_start(uint16_t port, const struct sd_port_conf *c, struct rte_mempool **pools,
		  char *err, size_t len)
{
	struct rte_eth_dev_info info;
	int rc = rte_eth_dev_info_get(port, &info);
	if (rc != 0) {
		say(err, len, "rte_eth_dev_info_get", rc);
		return -1;
	}
	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof(conf));
	if (c->rx_queues > 1 && info.flow_type_rss_offloads != 0) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf =
			(RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) &
			info.flow_type_rss_offloads;
		if (c->rss_key != NULL && c->rss_key_len == info.hash_key_size) {
			conf.rx_adv_conf.rss_conf.rss_key = (uint8_t *)c->rss_key;
			conf.rx_adv_conf.rss_conf.rss_key_len = c->rss_key_len;
		}
	}
	/* A chain of sluice buffers may leave as a chain of mbufs (jumbo frames). */
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	if (c->mtu > RTE_ETHER_MTU && (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER))
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
	rc = rte_eth_dev_configure(port, c->rx_queues, c->tx_queues, &conf);
	if (rc != 0) {
		say(err, len, "rte_eth_dev_configure", rc);
		return -1;
	}
	if (c->mtu != 0) {
		rc = rte_eth_dev_set_mtu(port, (uint16_t)c->mtu);
		if (rc != 0 && rc != -ENOTSUP) {
			say(err, len, "rte_eth_dev_set_mtu", rc);
			return -1;
		}
	}
	uint16_t rxd = c->rx_desc, txd = c->tx_desc;
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd);
	if (rc != 0) {
		say(err, len, "rte_eth_dev_adjust_nb_rx_tx_desc", rc);
		return -1;
	}
	int socket = rte_eth_dev_socket_id(port);
	for (uint16_t q = 0; q < c->rx_queues; q++) {
		rc = rte_eth_rx_queue_setup(port, q, rxd, socket, NULL, pools[q]);
		if (rc != 0) {
			say(err, len, "rte_eth_rx_queue_setup", rc);
			return -1;
		}
	}
	for (uint16_t q = 0; q < c->tx_queues; q++) {
		rc = rte_eth_tx_queue_setup(port, q, txd, socket, NULL);
		if (rc != 0) {
			say(err, len, "rte_eth_tx_queue_setup", rc);
			return -1;
		}
	}
	rc = rte_eth_dev_start(port);
	if (rc != 0) {
		say(err, len, "rte_eth_dev_start", rc);
		return -1;
	}
	if (c->promisc)
		rte_eth_promiscuous_enable(port);
	return 0;
}

void sd_port_stop(uint16_t port)
{
	/*
	 * What waits on the receive queues goes back to the pools first: a PMD frees its own
	 * descriptors at close, but a device whose rings hold mbufs it does not own (net_ring:
	 * what it sent waits on its receive side) would otherwise keep sluice's buffers.
	 * Bounded: a source that never runs dry (net_null) is read 64 bursts a queue.
	 */
	struct rte_eth_dev_info info;
	if (rte_eth_dev_info_get(port, &info) == 0) {
		struct rte_mbuf *pkts[SD_BURST];
		for (uint16_t q = 0; q < info.nb_rx_queues; q++) {
			uint16_t got = 1;
			for (int b = 0; b < 64 && got > 0; b++) {
				got = rte_eth_rx_burst(port, q, pkts, SD_BURST);
				rte_pktmbuf_free_bulk(pkts, got);
			}
		}
	}
	rte_eth_dev_stop(port);
	rte_eth_dev_close(port);
}

/* Link state: 1 up, 0 down; speed in Mb/s and full duplex into the pointers. */
int sd_port_link(uint16_t port, uint32_t *speed, int *duplex)
{
	struct rte_eth_link link;
	if (rte_eth_link_get_nowait(port, &link) != 0)
		return 0;
	*speed = link.link_speed;
	*duplex = link.link_duplex == RTE_ETH_LINK_FULL_DUPLEX;
	return link.link_status == RTE_ETH_LINK_UP;
}

/* The port's basic counters: received, sent, missed (no descriptor), rx errors, tx errors,
 * no mbuf. */
int sd_port_stats(uint16_t port, uint64_t out[6])
{
	struct rte_eth_stats s;
	int rc = rte_eth_stats_get(port, &s);
	if (rc != 0)
		return rc;
	out[0] = s.ipackets;
	out[1] = s.opackets;
	out[2] = s.imissed;
	out[3] = s.ierrors;
	out[4] = s.oerrors;
	out[5] = s.rx_nombuf;
	return 0;
}

/* Extended counters: up to `max` names and values; returns how many the port has. */
int sd_port_xstats(uint16_t port, char (*names)[64], uint64_t *values, unsigned max)
{
	int n = rte_eth_xstats_get_names(port, NULL, 0);
	if (n <= 0)
		return n;
	struct rte_eth_xstat_name xn[n];
	struct rte_eth_xstat xv[n];
	if (rte_eth_xstats_get_names(port, xn, n) != n || rte_eth_xstats_get(port, xv, n) != n)
		return -EAGAIN;
	for (int i = 0; i < n && (unsigned)i < max; i++) {
		snprintf(names[i], 64, "%s", xn[xv[i].id].name);
		values[i] = xv[i].value;
	}
	return n;
}

/*
 * Lay received packet `m` out for the graph at segment `*k` (sd_rx's arrays), or free it and
 * count it refused when a segment is not one of sluice's buffers or the arrays are full.
 * Returns its segment count, 0 when refused.
 */
static inline uint16_t lay_out_rx(struct rte_mbuf *m, uint32_t *seg_slot, uint16_t *seg_off,
				  uint16_t *seg_len, unsigned *k, unsigned seg_max,
				  uint32_t *refused)
{
	unsigned start = *k;
	int ok = start + m->nb_segs <= seg_max;
	/* One segment: `next` (the header's second cache line) is not read. */
	if (ok && m->nb_segs == 1) {
		uint32_t slot = slot_of(m);
		if (slot != UINT32_MAX) {
			seg_slot[start] = slot;
			uint8_t *data = rte_pktmbuf_mtod(m, uint8_t *);
			seg_off[start] = (uint16_t)(data - (sd_base + (uint64_t)slot * SD_STRIDE));
			seg_len[start] = m->data_len;
			*k = start + 1;
			return 1;
		}
	}
	unsigned j = start;
	for (struct rte_mbuf *s = m; ok && s != NULL; s = s->next) {
		uint32_t slot = slot_of(s);
		if (slot == UINT32_MAX) {
			ok = 0;
			break;
		}
		uint8_t *data = rte_pktmbuf_mtod(s, uint8_t *);
		seg_slot[j] = slot;
		seg_off[j] = (uint16_t)(data - (sd_base + (uint64_t)slot * SD_STRIDE));
		seg_len[j] = s->data_len;
		j++;
	}
	if (!ok) {
		rte_pktmbuf_free(m);
		(*refused)++;
		return 0;
	}
	*k = j;
	return (uint16_t)(j - start);
}

/*
 * Receive up to `n` (≤ 256) packets on (port, q) for the graph. Segment k of the burst is
 * seg_slot[k], starting seg_off[k] bytes into its slot, seg_len[k] long; packet i has
 * pkt_segs[i] segments. `seg_max` bounds the segments. Packets with an mbuf outside sluice's
 * buffers, or too many segments for the room left, are freed back to DPDK and counted in
 * `refused`. Returns the packets laid out.
 *
 * With the cross-connect patch (nodes/patch.rs; min_len ≤ max_len), the frames that a
 * cross-connect sends out as they came in are kept back first, as mbufs and untouched, up to
 * the first that it does not. Such a frame is one segment in sluice's buffers, `min_len` to
 * `max_len` bytes, and untagged: ethernet-input pads a shorter frame, the transmit drops a
 * longer one, and a tagged frame may be a sub-interface's or have more tags than sluice
 * parses. The kept frames go to `held` (their lengths to `held_len`, their count to
 * `*n_held`) for sd_patch_tx, which sends them before the graph sends the rest: that first
 * other frame and every frame after it are laid out for the graph, so the port sends the
 * burst in the order it came.
 */
uint16_t sd_rx(uint16_t port, uint16_t q, uint16_t min_len, uint16_t max_len,
		     struct rte_mbuf **held, uint16_t *held_len, uint16_t *n_held,
		     uint32_t *seg_slot, uint16_t *seg_off, uint16_t *seg_len,
		     uint16_t *pkt_segs, uint16_t n, unsigned seg_max, uint32_t *refused)
{
	struct rte_mbuf *pkts[SD_BURST];
	if (n > SD_BURST)
		n = SD_BURST;
	uint16_t got = rte_eth_rx_burst(port, q, pkts, n);
	const uintptr_t first = (uintptr_t)mbuf_of(0);
	const uintptr_t span = (uintptr_t)sd_count * SD_STRIDE;
	uint16_t kept = 0;
	for (; kept < got; kept++) {
		struct rte_mbuf *m = pkts[kept];
		uint16_t len = m->data_len;
		if (m->nb_segs != 1 || (uintptr_t)m - first >= span || len < min_len ||
		    len > max_len)
			break;
		const uint8_t *type = rte_pktmbuf_mtod_offset(m, const uint8_t *, 12);
		uint16_t t = (uint16_t)(type[0] << 8 | type[1]);
		if (t == RTE_ETHER_TYPE_VLAN || t == RTE_ETHER_TYPE_QINQ)
			break;
		held[kept] = m;
		held_len[kept] = len;
	}
	unsigned k = 0;
	uint16_t out = 0;
	for (uint16_t i = kept; i < got; i++) {
		struct rte_mbuf *m = pkts[i];
		uint16_t segs = lay_out_rx(m, seg_slot, seg_off, seg_len, &k, seg_max, refused);
		if (segs > 0)
			pkt_segs[out++] = segs;
	}
	*n_held = kept;
	return out;
}

/*
 * Send `n` frames kept back by sd_patch_rx on (port, q). Returns how many the port took; the
 * rest are freed (to their pool: sluice's stock), the caller counts them as a full queue.
 */
uint16_t sd_patch_tx(uint16_t port, uint16_t q, struct rte_mbuf **held, uint16_t n)
{
	uint16_t sent = rte_eth_tx_burst(port, q, held, n);
	if (sent < n)
		rte_pktmbuf_free_bulk(held + sent, n - sent);
	return sent;
}

/*
 * The header of a single-segment mbuf being sent, as mbuf_init and sd_tx's field writes
 * would leave it, but its first cache line written whole from a template, eight 8-byte
 * words, instead of field by field: the line misses the cache (the buffer was last touched
 * a vector ago) and fewer stores keep the store buffer from filling while it comes. The
 * second line gets `next`, `tx_offload`, `priv_size` and `timesync`.
 */
_Static_assert(offsetof(struct rte_mbuf, buf_iova) == 8 &&
		       offsetof(struct rte_mbuf, data_off) == 16 &&
		       offsetof(struct rte_mbuf, refcnt) == 18 &&
		       offsetof(struct rte_mbuf, nb_segs) == 20 &&
		       offsetof(struct rte_mbuf, port) == 22 &&
		       offsetof(struct rte_mbuf, ol_flags) == 24 &&
		       offsetof(struct rte_mbuf, packet_type) == 32 &&
		       offsetof(struct rte_mbuf, pkt_len) == 36 &&
		       offsetof(struct rte_mbuf, data_len) == 40 &&
		       offsetof(struct rte_mbuf, vlan_tci) == 42 &&
		       offsetof(struct rte_mbuf, hash) == 44 &&
		       offsetof(struct rte_mbuf, vlan_tci_outer) == 52 &&
		       offsetof(struct rte_mbuf, buf_len) == 54 &&
		       offsetof(struct rte_mbuf, pool) == 56 &&
		       offsetof(struct rte_mbuf, next) == 64 &&
		       offsetof(struct rte_mbuf, tx_offload) == 72,
	       "the mbuf layout sd_tx's template assumes (DPDK 22.11, IOVA as PA)");
_Static_assert(RTE_BYTE_ORDER == RTE_LITTLE_ENDIAN, "the template packs fields little-endian");

struct tx_template {
	/* refcnt 1, nb_segs 1, the port: data_off goes in the low 16 bits. */
	uint64_t rearm;
	/* hash.hi 0, vlan_tci_outer 0, buf_len. */
	uint64_t tail;
	uint64_t pool;
};

/* One 8-byte store at `at` bytes into `m` (memcpy: no aliasing question, one instruction). */
static inline void put64(struct rte_mbuf *m, size_t at, uint64_t v)
{
	memcpy((uint8_t *)m + at, &v, sizeof(v));
}

static inline void mbuf_send_one(struct rte_mbuf *m, const struct tx_template *t, uint16_t off,
				 uint16_t len)
{
	uint64_t buf = (uint64_t)(uintptr_t)m + sizeof(*m);
	put64(m, 0, buf);						 /* buf_addr */
	put64(m, 8, buf);						 /* buf_iova: IOVA as VA */
	put64(m, 16, t->rearm | (uint16_t)(off - SD_MBUF_AT - sizeof(*m))); /* data_off */
	put64(m, 24, 0);						 /* ol_flags */
	put64(m, 32, (uint64_t)len << 32); /* packet_type 0, pkt_len */
	put64(m, 40, len);		   /* data_len, vlan_tci 0, hash.lo 0 */
	put64(m, 48, t->tail);
	put64(m, 56, t->pool);
	put64(m, 64, 0); /* next */
	put64(m, 72, 0); /* tx_offload */
	m->priv_size = 0;
	m->timesync = 0;
}

/* Segments ahead whose mbuf header sd_tx asks the CPU to fetch for writing. */
#define SD_TX_AHEAD 8

/*
 * Send `n` (≤ 256) packets laid out as sd_rx gives them, through pool `mp`'s mbufs (each
 * segment's offset is at least 192: past the mbuf header). Returns how many the port took;
 * the rest are untouched by DPDK and stay the caller's.
 */
uint16_t sd_tx(uint16_t port, uint16_t q, struct rte_mempool *mp, const uint32_t *seg_slot,
	       const uint16_t *seg_off, const uint16_t *seg_len, const uint16_t *pkt_segs,
	       uint16_t n)
{
	struct rte_mbuf *pkts[SD_BURST];
	if (n > SD_BURST)
		n = SD_BURST;
	const struct tx_template t = {
		.rearm = (uint64_t)1 << 16 | (uint64_t)1 << 32 | (uint64_t)port << 48,
		.tail = (uint64_t)(uint16_t)(SD_STRIDE - SD_MBUF_AT - sizeof(struct rte_mbuf)) << 48,
		.pool = (uint64_t)(uintptr_t)mp,
	};
	unsigned segs = 0;
	for (uint16_t i = 0; i < n; i++)
		segs += pkt_segs[i];
	for (unsigned k = 0; k < segs && k < SD_TX_AHEAD; k++) {
		__builtin_prefetch(mbuf_of(seg_slot[k]), 1);
		__builtin_prefetch((uint8_t *)mbuf_of(seg_slot[k]) + RTE_CACHE_LINE_SIZE, 1);
	}
	unsigned k = 0;
	for (uint16_t i = 0; i < n; i++) {
		if (k + SD_TX_AHEAD < segs) {
			struct rte_mbuf *ahead = mbuf_of(seg_slot[k + SD_TX_AHEAD]);
			__builtin_prefetch(ahead, 1);
			__builtin_prefetch((uint8_t *)ahead + RTE_CACHE_LINE_SIZE, 1);
		}
		if (pkt_segs[i] == 1) {
			struct rte_mbuf *m = mbuf_of(seg_slot[k]);
			mbuf_send_one(m, &t, seg_off[k], seg_len[k]);
			pkts[i] = m;
			k++;
			continue;
		}
		struct rte_mbuf *head = NULL, *prev = NULL;
		uint32_t total = 0;
		for (uint16_t s = 0; s < pkt_segs[i]; s++, k++) {
			struct rte_mbuf *m = mbuf_of(seg_slot[k]);
			mbuf_init(m, mp);
			m->data_off = (uint16_t)(seg_off[k] - SD_MBUF_AT - sizeof(*m));
			m->data_len = seg_len[k];
			m->port = port;
			total += seg_len[k];
			if (prev != NULL)
				prev->next = m;
			else
				head = m;
			prev = m;
		}
		head->nb_segs = pkt_segs[i];
		head->pkt_len = total;
		pkts[i] = head;
	}
	return rte_eth_tx_burst(port, q, pkts, n);
}

/*
 * DPDK's own Toeplitz hash (the reference its PMDs and RSS tests hold NICs to) over `n`
 * 32-bit words in host order, as rte_ipv4_tuple lays them out: sluice's tests compare it with
 * sluice's software hash for the key it gives the ports.
 */
uint32_t sd_softrss(const uint32_t *words, unsigned n, const uint8_t *key)
{
	return rte_softrss((uint32_t *)words, n, key);
}
