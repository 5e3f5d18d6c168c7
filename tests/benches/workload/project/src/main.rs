//! The fixture's Rust program: built and tested by the workload.

fn greeting(name: &str) -> String {
    format!("hello, {name}")
}

fn main() {
    println!("{}", greeting("agent"));
}

#[cfg(test)]
mod tests {
    #[test]
    fn writes_a_scratch_file() {
        let file = std::env::temp_dir().join(format!("app-cargo-test-{}", std::process::id()));
        std::fs::write(&file, super::greeting("test")).expect("write the scratch file");
        assert_eq!(std::fs::read_to_string(&file).expect("read"), "hello, test");
        std::fs::remove_file(&file).expect("remove the scratch file");
    }
}
