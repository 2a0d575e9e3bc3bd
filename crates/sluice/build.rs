//! The DPDK driver is built where `pkg-config libdpdk` finds DPDK (Debian: `apt-get install
//! dpdk-dev`): its C shim is compiled here and the `sluice_dpdk` cfg turns the driver on.
//! Elsewhere, or with `SLUICE_NO_DPDK=1`, sluice builds without it and `driver = "dpdk"` is
//! a config error that says how to get it.

use std::path::PathBuf;
use std::process::Command;

const SHIM: &str = "src/drivers/dpdk/shim.c";

fn pkg_config(arg: &str) -> Option<String> {
    let out = Command::new("pkg-config")
        .args([arg, "libdpdk"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(sluice_dpdk)");
    println!("cargo::rerun-if-env-changed=SLUICE_NO_DPDK");
    println!("cargo::rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo::rerun-if-changed={SHIM}");
    if std::env::var_os("SLUICE_NO_DPDK").is_some_and(|v| v != "0") {
        return;
    }
    let (Some(cflags), Some(libs)) = (pkg_config("--cflags"), pkg_config("--libs")) else {
        return;
    };
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let obj = out.join("shim.o");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-c", SHIM, "-o"])
        .arg(&obj)
        .args(["-O2", "-fPIC", "-Wall", "-Werror", "-std=gnu11"])
        .args(cflags.split_whitespace())
        .status()
        .unwrap_or_else(|e| panic!("{cc}: {e}"));
    assert!(status.success(), "compiling {SHIM} failed");
    let lib = out.join("libsluice_dpdk_shim.a");
    let _ = std::fs::remove_file(&lib);
    let status = Command::new("ar")
        .arg("crs")
        .arg(&lib)
        .arg(&obj)
        .status()
        .unwrap_or_else(|e| panic!("ar: {e}"));
    assert!(status.success(), "ar failed");
    println!("cargo::rustc-link-search=native={}", out.display());
    println!("cargo::rustc-link-lib=static=sluice_dpdk_shim");
    for flag in libs.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo::rustc-link-search=native={dir}");
        } else if let Some(name) = flag.strip_prefix("-l") {
            println!("cargo::rustc-link-lib={name}");
        }
    }
    println!("cargo::rustc-cfg=sluice_dpdk");
}
