//! DPDK's environment (EAL), started once per process before the first DPDK interface opens,
//! and the mempools over sluice's buffers, one per queue number.
//!
//! sluice keeps its own threads: EAL gets one lcore (the main thread, whose CPU set is put
//! back after start-up) and spawns no workers; each thread that moves packets registers for
//! an lcore id of its own (`register_thread`) so that mempool caches serve it, unpinned.

use super::ffi;
use super::stock::Pool;
use crate::buffer::{BufferPool, STRIDE};
use std::ffi::{c_char, CString};
use std::sync::{Arc, Mutex, OnceLock};

pub struct Eal {
    buffers: Arc<BufferPool>,
    pools: Mutex<Vec<Arc<Pool>>>,
    /// Ports open now; the last to close gives the stocks back.
    ports: Mutex<usize>,
}

static EAL: OnceLock<Eal> = OnceLock::new();
static STARTING: Mutex<()> = Mutex::new(());

/// Huge pages the system has free now (2 MiB or any size, from /proc/meminfo).
fn free_huge_pages() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("HugePages_Free:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// A PCI address (`0000:3b:00.0` or `3b:00.0`): allowed with `-a`, not a vdev.
pub fn is_pci(devargs: &str) -> bool {
    let name = devargs.split(',').next().unwrap_or("");
    let parts: Vec<&str> = name.split([':', '.']).collect();
    (parts.len() == 3 || parts.len() == 4)
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// The ethdev name of a port given by `devargs`: the vdev's name, or the full PCI address.
pub fn port_name(devargs: &str) -> String {
    let name = devargs.split(',').next().unwrap_or("").to_string();
    if is_pci(&name) && name.split(':').count() == 2 {
        format!("0000:{name}")
    } else {
        name
    }
}

/// The EAL arguments for `devices` and the operator's `extra` ones, and a line saying how
/// memory is had.
pub fn arguments(devices: &[String], extra: &[String], huge: bool) -> (Vec<String>, String) {
    let cpu = crate::sys::cpu::current_cpu().unwrap_or(0);
    let mut a: Vec<String> = vec![
        "sluice".into(),
        "--lcores".into(),
        format!("0@{cpu}"),
        "--no-telemetry".into(),
        "--file-prefix".into(),
        format!("sluice{}", std::process::id()),
    ];
    // Nothing left in /var/run or hugetlbfs for another process to trip on.
    let memory = if huge {
        a.push("--in-memory".into());
        "huge pages".to_string()
    } else {
        a.extend(["--no-huge".into(), "--no-shconf".into()]);
        a.extend(["-m".into(), "256".into()]);
        "no huge pages free: DPDK's own memory from normal pages (--no-huge, 256 MiB); \
         sluice's buffers are its own"
            .to_string()
    };
    let pci: Vec<&String> = devices.iter().filter(|d| is_pci(d)).collect();
    if pci.is_empty() {
        a.push("--no-pci".into());
    }
    for d in devices {
        a.push(if is_pci(d) { "-a" } else { "--vdev" }.into());
        a.push(d.clone());
    }
    a.extend(extra.iter().cloned());
    (a, memory)
}

/// Start EAL with `devices` (every DPDK interface's devargs) unless it runs already.
pub fn start(
    devices: &[String],
    extra: &[String],
    buffers: &Arc<BufferPool>,
) -> Result<(), String> {
    let _one = STARTING.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(e) = EAL.get() {
        if !Arc::ptr_eq(&e.buffers, buffers) {
            return Err("DPDK runs once per process, with the buffer pool it started with".into());
        }
        return Ok(());
    }
    let (args, memory) = arguments(devices, extra, free_huge_pages() > 0);
    eprintln!("dpdk: {}; EAL {}", version(), args[1..].join(" "));
    eprintln!("dpdk: {memory}");
    let owned: Vec<CString> = args
        .iter()
        .map(|a| CString::new(a.as_str()).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    // EAL may reorder argv (getopt): hand it pointers it can move.
    let mut argv: Vec<*mut c_char> = owned.iter().map(|c| c.as_ptr() as *mut c_char).collect();
    let region = buffers.region();
    let mut err = ffi::err_buf();
    // SAFETY: the region pointer and size describe the pool's mapping, which `Eal` keeps
    // alive (it holds the pool) for as long as DPDK may touch it: the rest of the process.
    // argv holds `argc` valid C strings that outlive the call; the error buffer is ours.
    let rc = unsafe {
        if ffi::sd_set_region(region.ptr().cast(), STRIDE as u64, buffers.count()) != 0 {
            return Err(format!(
                "shim.c's SD_STRIDE is not sluice's buffer stride {STRIDE}"
            ));
        }
        ffi::sd_eal_init(
            argv.len() as i32,
            argv.as_mut_ptr(),
            err.as_mut_ptr(),
            err.len(),
        )
    };
    if rc != 0 {
        return Err(format!("DPDK did not start: {}", ffi::text(&err)));
    }
    // EAL keeps nothing in its runtime directory with these options: remove it rather than
    // leave one a process in /var/run/dpdk (remove_dir takes only an empty directory).
    // SAFETY: after a successful start EAL returns its static, NUL-terminated path.
    let dir = unsafe { std::ffi::CStr::from_ptr(ffi::sd_runtime_dir()) };
    let _ = std::fs::remove_dir(dir.to_string_lossy().as_ref());
    let _ = EAL.set(Eal {
        buffers: buffers.clone(),
        pools: Mutex::new(Vec::new()),
        ports: Mutex::new(0),
    });
    Ok(())
}

pub fn version() -> String {
    // SAFETY: rte_version returns a static NUL-terminated string.
    unsafe { std::ffi::CStr::from_ptr(ffi::sd_version()) }
        .to_string_lossy()
        .into_owned()
}

pub fn get() -> Result<&'static Eal, String> {
    EAL.get()
        .ok_or_else(|| "DPDK is not started (no [[interface]] with driver = \"dpdk\")".into())
}

impl Eal {
    /// The mempool of queue number `q` (every port's queue `q` shares it).
    pub fn pool(&self, q: usize) -> Result<Arc<Pool>, String> {
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        while pools.len() <= q {
            let name = format!("sluice_q{}", pools.len());
            pools.push(Arc::new(Pool::create(&name, &self.buffers)?));
        }
        Ok(pools[q].clone())
    }

    pub fn buffers(&self) -> &Arc<BufferPool> {
        &self.buffers
    }

    pub fn port_opened(&self) {
        *self.ports.lock().unwrap_or_else(|p| p.into_inner()) += 1;
    }

    /// A port closed; after the last, every stock goes back to the pool.
    pub fn port_closed(&self) {
        let mut n = self.ports.lock().unwrap_or_else(|p| p.into_inner());
        *n = n.saturating_sub(1);
        if *n == 0 {
            for p in self.pools.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                p.give_back(&self.buffers);
            }
        }
    }
}

/// An lcore id for this thread while it lives (no pinning): mempool caches need one.
pub fn register_thread() {
    struct Registered(bool);
    impl Drop for Registered {
        fn drop(&mut self) {
            if self.0 {
                // SAFETY: this thread registered in `register_thread` and is ending.
                unsafe { ffi::sd_thread_unregister() };
            }
        }
    }
    thread_local! {
        static REGISTERED: std::cell::RefCell<Option<Registered>> = const { std::cell::RefCell::new(None) };
    }
    REGISTERED.with(|r| {
        let mut r = r.borrow_mut();
        if r.is_none() {
            // SAFETY: EAL is started (a port exists before any queue runs); registering
            // only gives this thread an lcore id. A refusal (no lcore left) leaves the
            // thread without caches: slower, still correct.
            let ok = unsafe { ffi::sd_thread_register() } == 0;
            *r = Some(Registered(ok));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_addresses_are_told_from_vdevs() {
        assert!(is_pci("0000:3b:00.0"));
        assert!(is_pci("3b:00.0"));
        assert!(is_pci("0000:3b:00.1,rx_queue_size=2048"));
        assert!(!is_pci("net_null0"));
        assert!(!is_pci("net_memif0,role=server,socket=/run/m.sock"));
        assert_eq!(port_name("3b:00.0"), "0000:3b:00.0");
        assert_eq!(port_name("net_pcap0,rx_pcap=a.pcap"), "net_pcap0");
    }

    #[test]
    fn arguments_name_each_device_and_memory() {
        let devs = vec!["net_null0".to_string(), "0000:3b:00.0".to_string()];
        let (a, memory) = arguments(&devs, &["--log-level=8".into()], false);
        assert!(a.windows(2).any(|w| w == ["--vdev", "net_null0"]), "{a:?}");
        assert!(a.windows(2).any(|w| w == ["-a", "0000:3b:00.0"]), "{a:?}");
        assert!(a.contains(&"--no-huge".to_string()) && memory.contains("no huge pages"));
        assert!(!a.contains(&"--no-pci".to_string()));
        assert_eq!(a.last().map(String::as_str), Some("--log-level=8"));
        let (a, _) = arguments(&devs[..1], &[], true);
        assert!(a.contains(&"--no-pci".to_string()) && !a.contains(&"--no-huge".to_string()));
    }
}
