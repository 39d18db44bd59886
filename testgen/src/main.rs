//! `svcnet-testgen SEED DIR`: writes the differential-test case of SEED into DIR:
//! `state-0.json` ... `state-N.json` (the last is the input, the others `--prior` states) and
//! `case.json` (`{"seed","args","history":[{"file","aged"}],"input","covers"}`).

use std::path::Path;
use std::process::ExitCode;

use serde_json::json;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(seed), Some(dir)) = (args.first().and_then(|s| s.parse::<u64>().ok()), args.get(1)) else {
        eprintln!("usage: svcnet-testgen SEED DIR");
        return ExitCode::from(2);
    };
    let case = svcnet_testgen::generate(seed);
    let dir = Path::new(dir);
    if let Err(e) = write(dir, &case) {
        eprintln!("svcnet-testgen: {}: {e}", dir.display());
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

fn write(dir: &Path, case: &svcnet_testgen::Case) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut files = Vec::new();
    for (i, s) in case.states.iter().enumerate() {
        let name = format!("state-{i}.json");
        std::fs::write(dir.join(&name), serde_json::to_vec_pretty(s)?)?;
        files.push(name);
    }
    let input = files.pop().unwrap_or_default();
    let history: Vec<_> = files
        .iter()
        .zip(&case.aged)
        .map(|(f, a)| json!({"file": f, "aged": a}))
        .collect();
    let meta = json!({
        "seed": case.seed,
        "args": case.args,
        "history": history,
        "input": input,
        "covers": case.covers,
    });
    std::fs::write(dir.join("case.json"), serde_json::to_vec_pretty(&meta)?)
}
