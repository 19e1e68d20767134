// The raw stream goes around every check of the crate (captures, owners).
fn main() {
    let gpu = sparserl_rt::Gpu::new(0).unwrap();
    let stream = gpu.stream();
    stream.synchronize().unwrap();
}
