//! The descriptor parser on arbitrary text: an error naming the manifest,
//! never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = sparserl_build::descriptor::parse_descriptor(Path::new("fuzz/Cargo.toml"), text);
    }
});
