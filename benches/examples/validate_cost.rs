//! The work of one validation mode over the 10,000 Services of the `validate` bench, repeated,
//! for counting under `perf stat -e instructions:u` (a count that other load on the machine does
//! not change, unlike criterion's wall-clock time):
//!
//! ```sh
//! cargo build --release -p svcnet-benches --example validate_cost
//! perf stat -e instructions:u target/release/examples/validate_cost create 20
//! perf stat -e instructions:u target/release/examples/validate_cost none 20
//! ```
//! Each mode matches one function of the bench:
//!
//! | mode | bench | Services |
//! |---|---|---|
//! | `create` | `service_create_10k` (`validate_service_create` alone) | all |
//! | `default_and_validate` | `default_and_validate_10k` | all |
//! | `apiserver` | `apiserver_create_10k` (`create_service` without cluster state) | all |
//! | `pure` | `default_and_validate_valid_10k` | valid only |
//! | `apiserver_valid` | `apiserver_create_valid_10k` | valid only |
//!
//! Every mode copies its 10,000 Services once a round (`create` too, so that all subtract
//! alike); `none` does only that, and builds the Services, to subtract:
//! (count(mode) - count(none)) / (rounds x 10,000) is the cost of one Service.

use std::hint::black_box;

use svcnet_allocators::SplitMix64;
use svcnet_benches::validation::{SERVICES, services};
use svcnet_model::{Service, defaults, validation};

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "pure".into());
    let rounds: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(10);
    let all = services();
    let valid: Vec<Service> = all
        .iter()
        .filter(|s| validation::validate_service_create(s).is_empty())
        .cycle()
        .take(SERVICES)
        .cloned()
        .collect();
    let input = if matches!(mode.as_str(), "pure" | "apiserver_valid") {
        &valid
    } else {
        &all
    };
    let mut rng = SplitMix64::new(1);
    let mut errors = 0usize;
    for _ in 0..rounds {
        let mut copy = input.clone();
        for s in &mut copy {
            match mode.as_str() {
                "create" => errors += validation::validate_service_create(black_box(s)).len(),
                "pure" | "default_and_validate" => {
                    defaults::default_service(s);
                    errors += validation::validate_service_create(black_box(s)).len();
                }
                "apiserver" | "apiserver_valid" => {
                    errors += svcnet_apiserver::create_service(black_box(s), None, &mut rng)
                        .errors
                        .len();
                }
                _ => {}
            }
        }
        black_box(&copy);
    }
    println!("{mode}: {rounds} x {SERVICES} Services, {errors} errors");
}
