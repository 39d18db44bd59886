//! Validation throughput over 10,000 varied Services: every type, single- and dual-stack,
//! headless, ExternalName, affinity, load-balancer fields, and about one in eight invalid in
//! some way (so error construction is measured too).
//!
//! `cargo bench -p svcnet-benches --bench validate`; throughput is reported in Services/second.
//!
//! `apiserver_create_10k` is `svcnet validate`'s default mode (defaulting, the storage hooks,
//! the allocator checks that need no allocator state, the REST strategy, validation with
//! merged causes) on the same Services; `apiserver_create_valid_10k` and
//! `default_and_validate_valid_10k` compare the two on the valid ones only.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use svcnet_allocators::SplitMix64;
use svcnet_benches::validation::{SERVICES, services};
use svcnet_model::{Service, defaults, validation};

fn bench(c: &mut Criterion) {
    let svcs = services();
    let invalid = svcs
        .iter()
        .filter(|s| !validation::validate_service_create(s).is_empty())
        .count();
    eprintln!("validate: {SERVICES} Services, {invalid} invalid");

    let mut g = c.benchmark_group("validate");
    g.throughput(Throughput::Elements(SERVICES as u64));
    g.bench_function("service_create_10k", |b| {
        b.iter(|| {
            let mut errors = 0usize;
            for s in &svcs {
                errors += validation::validate_service_create(black_box(s)).len();
            }
            errors
        })
    });
    g.bench_function("service_update_10k", |b| {
        b.iter(|| {
            let mut errors = 0usize;
            for s in &svcs {
                errors += validation::validate_service_update(black_box(s), black_box(s)).len();
            }
            errors
        })
    });
    g.bench_function("default_and_validate_10k", |b| {
        b.iter_batched(
            || svcs.clone(),
            |mut all| {
                let mut errors = 0usize;
                for s in &mut all {
                    defaults::default_service(s);
                    errors += validation::validate_service_create(s).len();
                }
                // Returned, so that freeing the Services is not measured.
                (errors, all)
            },
            criterion::BatchSize::LargeInput,
        )
    });
    g.bench_function("apiserver_create_10k", |b| {
        b.iter_batched(
            || svcs.clone(),
            |mut all| {
                let mut rng = SplitMix64::new(1);
                let mut errors = 0usize;
                for s in &mut all {
                    errors += svcnet_apiserver::create_service(s, None, &mut rng).errors.len();
                }
                (errors, all)
            },
            criterion::BatchSize::LargeInput,
        )
    });
    g.finish();

    // The valid Services alone, scaled to 10,000: the default mode against defaulting plus
    // validation.
    let valid: Vec<Service> = svcs
        .iter()
        .filter(|s| validation::validate_service_create(s).is_empty())
        .cycle()
        .take(SERVICES)
        .cloned()
        .collect();
    let mut g = c.benchmark_group("validate_valid");
    g.throughput(Throughput::Elements(SERVICES as u64));
    g.bench_function("default_and_validate_valid_10k", |b| {
        b.iter_batched(
            || valid.clone(),
            |mut all| {
                let mut errors = 0usize;
                for s in &mut all {
                    defaults::default_service(s);
                    errors += validation::validate_service_create(s).len();
                }
                // Returned, so that freeing the Services is not measured.
                (errors, all)
            },
            criterion::BatchSize::LargeInput,
        )
    });
    g.bench_function("apiserver_create_valid_10k", |b| {
        b.iter_batched(
            || valid.clone(),
            |mut all| {
                let mut rng = SplitMix64::new(1);
                let mut errors = 0usize;
                for s in &mut all {
                    errors += svcnet_apiserver::create_service(s, None, &mut rng).errors.len();
                }
                (errors, all)
            },
            criterion::BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
