//! The C shim's functions (shim.c), as Rust sees them: plain integers, pointers to sluice's
//! own arrays, and opaque DPDK handles. No DPDK struct crosses except the two the shim
//! defines here with `#[repr(C)]`.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

/// DPDK's `struct rte_mempool`, never looked into from Rust.
#[repr(C)]
pub struct Mempool {
    _opaque: [u8; 0],
}

/// `struct sd_port_conf`.
#[repr(C)]
pub struct PortConf {
    pub rx_queues: u16,
    pub tx_queues: u16,
    pub rx_desc: u16,
    pub tx_desc: u16,
    pub mtu: u32,
    pub promisc: c_int,
    pub rss_key: *const u8,
    pub rss_key_len: u8,
}

/// `struct sd_port_info`.
#[repr(C)]
pub struct PortInfo {
    pub driver: [c_char; 64],
    pub max_rx_queues: u16,
    pub max_tx_queues: u16,
    pub rx_offload_capa: u64,
    pub tx_offload_capa: u64,
    pub rss_hf: u64,
    pub rss_key_len: u8,
    pub mac: [u8; 6],
    pub max_mtu: u32,
}

extern "C" {
    pub fn sd_set_region(base: *mut c_void, stride: u64, count: u32) -> c_int;
    pub fn sd_eal_init(argc: c_int, argv: *mut *mut c_char, err: *mut c_char, len: usize) -> c_int;
    pub fn sd_version() -> *const c_char;
    pub fn sd_runtime_dir() -> *const c_char;
    pub fn sd_thread_register() -> c_int;
    pub fn sd_thread_unregister();
    pub fn sd_pool_create(
        name: *const c_char,
        n: c_uint,
        cache: c_uint,
        stock: *mut c_void,
        err: *mut c_char,
        len: usize,
    ) -> *mut Mempool;
    pub fn sd_pool_flush(mp: *mut Mempool);
    pub fn sd_mbuf_prepare(mp: *mut Mempool, slots: *const u32, n: c_uint);
    pub fn sd_port_find(name: *const c_char, port: *mut u16) -> c_int;
    pub fn sd_port_info(port: u16, out: *mut PortInfo) -> c_int;
    pub fn sd_port_start(
        port: u16,
        c: *const PortConf,
        pools: *const *mut Mempool,
        err: *mut c_char,
        len: usize,
    ) -> c_int;
    pub fn sd_port_stop(port: u16);
    #[cfg(test)]
    pub fn sd_softrss(words: *const u32, n: c_uint, key: *const u8) -> u32;
    pub fn sd_port_dma_map(
        port: u16,
        addr: *mut c_void,
        len: u64,
        page_sz: u64,
        err: *mut c_char,
        elen: usize,
    ) -> c_int;
    pub fn sd_port_link(port: u16, speed: *mut u32, duplex: *mut c_int) -> c_int;
    pub fn sd_port_stats(port: u16, out: *mut u64) -> c_int;
    pub fn sd_port_xstats(
        port: u16,
        names: *mut [c_char; 64],
        values: *mut u64,
        max: c_uint,
    ) -> c_int;
    #[allow(clippy::too_many_arguments)]
    pub fn sd_tx(
        port: u16,
        q: u16,
        mp: *mut Mempool,
        seg_slot: *const u32,
        seg_off: *const u16,
        seg_len: *const u16,
        pkt_segs: *const u16,
        n: u16,
    ) -> u16;
    #[allow(clippy::too_many_arguments)]
    pub fn sd_rx(
        port: u16,
        q: u16,
        min_len: u16,
        max_len: u16,
        held: *mut *mut c_void,
        held_len: *mut u16,
        n_held: *mut u16,
        seg_slot: *mut u32,
        seg_off: *mut u16,
        seg_len: *mut u16,
        pkt_segs: *mut u16,
        n: u16,
        seg_max: c_uint,
        refused: *mut u32,
    ) -> u16;
    pub fn sd_patch_tx(port: u16, q: u16, held: *mut *mut c_void, n: u16) -> u16;
}

/// The text of a C buffer the shim wrote an error into.
pub fn text(buf: &[c_char]) -> String {
    // SAFETY: the shim writes with snprintf, which always ends the text with a NUL inside
    // the buffer; a buffer it never wrote is all zeroes, the empty string.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// Room for an error from the shim.
pub fn err_buf() -> [c_char; 256] {
    [0; 256]
}
