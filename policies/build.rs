//! Embeds `policy.json` when present (cfg `sparserl_has_policy`, env
//! `SPARSERL_POLICY_SHA`) and, with feature `train`, adds an rpath to libtorch.

use sha2::{Digest, Sha256};
use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(sparserl_has_policy)");
    let dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let policy = dir.join("policy.json");
    match std::fs::read(&policy) {
        Ok(bytes) => {
            println!("cargo::rerun-if-changed=policy.json");
            let sha: String = Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            println!("cargo::rustc-cfg=sparserl_has_policy");
            println!("cargo::rustc-env=SPARSERL_POLICY_SHA={sha}");
        }
        Err(_) => {
            // A missing file would make cargo rerun this script (and rebuild
            // the crate) on every build; watching the folder catches the file
            // appearing without that cost.
            println!("cargo::rerun-if-changed=.");
            println!("cargo::rustc-env=SPARSERL_POLICY_SHA=none");
        }
    }
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=LIBTORCH");
    if std::env::var_os("CARGO_FEATURE_TRAIN").is_some()
        && let Ok(libtorch) = std::env::var("LIBTORCH")
    {
        println!("cargo::rustc-link-arg=-Wl,-rpath,{libtorch}/lib");
    }
}
