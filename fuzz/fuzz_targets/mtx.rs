//! The Matrix Market reader on arbitrary bytes: an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = sparserl_rt::mtx::read_matrix_market_from(data, "fuzz");
});
