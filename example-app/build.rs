fn main() {
    sparserl_build::build();
}
