// Loading PTX by entry name is unsafe (and lives in a namespace of its own,
// so it cannot replace `ops::fill`'s kernel either way).
fn main() {
    let gpu = sparserl_rt::Gpu::new(0).unwrap();
    let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n";
    let _f = gpu.load_ptx("sparserl_fill_f32", ptx).unwrap();
}
