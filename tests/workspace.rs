//! The product and the tester are separate crates and the compiler keeps them so (issue 34):
//! `sluice` (the dataplane, the daemon and its CLI) depends on nothing of `sluice-lab` (the
//! generator, the lab, the benchmarks), which depends on it; the `sluice` command is built from
//! this package over both. Read from `cargo metadata`, as a reviewer would check it.

use serde_json::Value;
use std::process::Command;

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata JSON")
}

fn package<'a>(meta: &'a Value, name: &str) -> &'a Value {
    meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no package {name} in the workspace"))
}

/// Names of the packages `pkg` depends on, of every kind (normal, dev, build).
fn dependencies(pkg: &Value) -> Vec<String> {
    pkg["dependencies"]
        .as_array()
        .expect("dependencies")
        .iter()
        .map(|d| d["name"].as_str().expect("name").to_string())
        .collect()
}

#[test]
fn the_product_does_not_depend_on_the_tester() {
    let meta = metadata();
    let product = dependencies(package(&meta, "sluice"));
    assert!(
        !product.iter().any(|d| d.starts_with("sluice")),
        "the product crate depends on {product:?}"
    );
    // The tester's only tools stay out of the product.
    assert!(!product.contains(&"inferno".to_string()), "{product:?}");
    let tester = dependencies(package(&meta, "sluice-lab"));
    assert!(tester.contains(&"sluice".to_string()), "{tester:?}");
}

#[test]
fn one_sluice_command_over_both() {
    let meta = metadata();
    let members = meta["workspace_members"].as_array().expect("members");
    assert_eq!(members.len(), 3, "{members:?}");
    let bins: Vec<(String, String)> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .flat_map(|p| {
            p["targets"]
                .as_array()
                .expect("targets")
                .iter()
                .filter(|t| {
                    t["kind"]
                        .as_array()
                        .is_some_and(|k| k.contains(&"bin".into()))
                })
                .map(move |t| {
                    (
                        p["name"].as_str().unwrap().to_string(),
                        t["name"].as_str().unwrap().to_string(),
                    )
                })
        })
        .collect();
    assert_eq!(bins, [("sluice-cli".to_string(), "sluice".to_string())]);
}
