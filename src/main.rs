fn main() {
    println!("sluice");
}
