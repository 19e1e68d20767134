//! What the device tests share.

use sparserl_rt::Gpu;

/// GPU 0, or `None` after printing why `test` did not run.
pub fn gpu_or_skip(test: &str) -> Option<Gpu> {
    match Gpu::new(0) {
        Ok(g) => Some(g),
        Err(e) => {
            eprintln!("{test}: skipped (no GPU): {e}");
            None
        }
    }
}
