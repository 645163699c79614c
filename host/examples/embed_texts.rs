//! Embeds texts with a model folder, for evaluating search by meaning:
//! `cargo run -p mcpw --release --example embed_texts -- MODEL_DIR TEXTS.json VECTORS.json`
//! reads a JSON array of texts and adds their vectors to the JSON object
//! (text → vector) in VECTORS.json.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [model, texts, vectors] = &args[..] else {
        eprintln!("usage: embed_texts MODEL_DIR TEXTS.json VECTORS.json");
        std::process::exit(2);
    };
    let model = mcpw::embed::Model::load(model.as_ref()).unwrap_or_else(|e| panic!("{e}"));
    let texts: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(texts).unwrap()).unwrap();
    let mut known: serde_json::Map<String, serde_json::Value> = std::fs::read_to_string(vectors)
        .ok()
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or_default();
    let started = std::time::Instant::now();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let made = model.embed(&refs).unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "{} texts embedded in {:.1?}",
        texts.len(),
        started.elapsed()
    );
    for (t, v) in texts.into_iter().zip(made) {
        known.insert(t, serde_json::json!(v));
    }
    std::fs::write(vectors, serde_json::to_string(&known).unwrap()).unwrap();
}
