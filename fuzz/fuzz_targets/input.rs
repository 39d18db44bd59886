//! Bytes → the CLI's reader (JSON, YAML, Lists, several documents) → defaulting → validation of
//! every kind: nothing panics, and defaulting (with the clusterIP normalisation) is idempotent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use svcnet_cli::input::{decode_object, flatten, parse_documents};
use svcnet_model::{KNOWN_KINDS, Object, defaults, validation};

fn messages(errors: &[svcnet_model::field::FieldError]) {
    for e in errors {
        let _ = e.to_string();
        let _ = e.body();
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(docs) = parse_documents("fuzz", data) else {
        return;
    };
    let mut objects = Vec::new();
    for (v, origin) in flatten(docs) {
        // Kinds svcnet ignores (and objects without a kind) only print a warning.
        let kind = v.get("kind").and_then(|k| k.as_str());
        if kind.is_some_and(|k| !KNOWN_KINDS.contains(&k)) || (kind.is_none() && v.is_object()) {
            continue;
        }
        if let Ok(Some(o)) = decode_object("fuzz", &origin, v) {
            objects.push(o);
        }
    }
    let mut defaulted = Vec::with_capacity(objects.len());
    for raw in &objects {
        // `--no-defaults`: validation of the object as written.
        messages(&validation::validate_object(raw, None));
        let mut o = raw.clone();
        defaults::default_object(&mut o);
        let mut again = o.clone();
        defaults::default_object(&mut again);
        assert_eq!(again, o, "defaulting twice differs from defaulting once");
        if let Object::Service(svc) = &mut o {
            defaults::normalize_cluster_ips(svc, None);
            let mut twice = svc.clone();
            defaults::normalize_cluster_ips(&mut twice, None);
            assert_eq!(&twice, svc, "normalize_cluster_ips is not idempotent");
        }
        messages(&validation::validate_object(&o, None));
        messages(&validation::validate_object(&o, Some(&o)));
        messages(&validation::validate_object_status(&o, &o));
        messages(&validation::validate_object(&o, Some(raw)));
        defaulted.push(o);
    }
    // Updates between neighbouring objects (of any kinds).
    for w in defaulted.windows(2) {
        messages(&validation::validate_object(&w[1], Some(&w[0])));
        messages(&validation::validate_object_status(&w[1], &w[0]));
    }
});
