// The loader of generated entries is crate-private: a caller cannot
// register an image under a generated kernel's key.
fn main() {
    let gpu = sparserl_rt::Gpu::new(0).unwrap();
    let _ = sparserl_rt::launch::load_entry(&gpu, "k", "entry", None, "");
}
