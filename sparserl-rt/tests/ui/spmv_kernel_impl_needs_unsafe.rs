// A kernel spec is launched with the crate's ABI: implementing SpmvKernel
// (for foreign PTX) must be `unsafe impl`.
struct Foreign;

impl sparserl_rt::SpmvKernel for Foreign {
    type Value = f32;
    fn spec(&self) -> &'static sparserl_rt::KernelSpec {
        std::process::abort()
    }
}

fn main() {}
