fn main() {
    let gpu = sparserl_rt::Gpu::new(0).unwrap();
    let _f = gpu
        .function_or_load("sparserl_fill_f32", || Ok(String::new()))
        .unwrap();
}
