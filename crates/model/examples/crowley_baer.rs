//! Prints the model of every system file given on the command line:
//! `cargo run --release -p paraclick-model --example crowley_baer -- models/crowley-baer/*.toml`
fn main() {
    for a in std::env::args().skip(1) {
        match paraclick_model::pc::load(std::path::Path::new(&a)) {
            Ok(s) => {
                let m = s.model();
                print!("{}", m.render(&m.evaluate()));
                println!();
            }
            Err(e) => eprintln!("{e}"),
        }
    }
}
