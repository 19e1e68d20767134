// A second stream made from the context would not be ordered with the Gpu's.
fn main() {
    let gpu = sparserl_rt::Gpu::new(0).unwrap();
    let _other = gpu.context().new_stream().unwrap();
}
