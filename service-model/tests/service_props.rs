//! Properties of Service defaulting and validation over generated Services:
//! - validation never panics, whatever the fields hold (garbage strings, out-of-range ports,
//!   mismatched families, half-set affinity configs, ...), for create, update and status;
//! - defaulting is idempotent;
//! - a well-formed Service is valid, and stays valid (and equal) after a serde round trip.

mod strategies;

use proptest::prelude::*;
use strategies::service::{any_service, endpoint_slice, valid_service};
use svcnet_model::field::ErrorList;
use svcnet_model::validation::{
    validate_endpoint_slice_create, validate_service_create, validate_service_status_update,
    validate_service_update,
};
use svcnet_model::{Service, defaults};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 128,
        ..ProptestConfig::default()
    }
}

fn assert_well_formed(errors: &ErrorList) {
    for e in errors {
        let text = e.to_string();
        assert!(text.starts_with(&e.field), "{text}");
        assert!(
            ["metadata", "spec", "status", "allocateLoadBalancerNodePorts"]
                .iter()
                .any(|root| e.field.starts_with(root)),
            "unexpected root in {text}"
        );
        assert!(!e.type_.reason().is_empty());
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn validation_never_panics(a in any_service(), b in any_service()) {
        assert_well_formed(&validate_service_create(&a));
        assert_well_formed(&validate_service_update(&a, &b));
        assert_well_formed(&validate_service_status_update(&a, &b));
        let mut d = a.clone();
        defaults::default_service(&mut d);
        defaults::normalize_cluster_ips(&mut d, Some(&b));
        assert_well_formed(&validate_service_create(&d));
        assert_well_formed(&validate_service_update(&d, &b));
    }

    #[test]
    fn defaulting_is_idempotent(svc in any_service()) {
        let mut once = svc.clone();
        defaults::default_service(&mut once);
        let mut twice = once.clone();
        defaults::default_service(&mut twice);
        prop_assert_eq!(once, twice);
    }

    #[test]
    fn well_formed_services_are_valid_and_survive_serde(svc in valid_service()) {
        let mut svc = svc;
        defaults::default_service(&mut svc);
        let errors = validate_service_create(&svc);
        prop_assert!(errors.is_empty(), "{:?}\n{:#?}", errors.iter().map(ToString::to_string).collect::<Vec<_>>(), svc);
        prop_assert!(validate_service_update(&svc, &svc).is_empty());
        let json = serde_json::to_string(&svc).expect("encode");
        let back: Service = serde_json::from_str(&json).expect("decode");
        prop_assert_eq!(&back, &svc);
        prop_assert!(validate_service_create(&back).is_empty());
    }

    #[test]
    fn valid_services_stay_valid_after_serde(svc in any_service()) {
        let mut svc = svc;
        defaults::default_service(&mut svc);
        let before = validate_service_create(&svc);
        let json = serde_json::to_string(&svc).expect("encode");
        let back: Service = serde_json::from_str(&json).expect("decode");
        prop_assert_eq!(validate_service_create(&back), before);
    }

    #[test]
    fn endpoint_slice_validation_never_panics(a in endpoint_slice(), b in endpoint_slice()) {
        let mut a = a;
        let _ = validate_endpoint_slice_create(&a);
        let _ = svcnet_model::validation::validate_endpoint_slice_update(&a, &b);
        defaults::default_endpoint_slice(&mut a);
        for e in validate_endpoint_slice_create(&a) {
            prop_assert!(!e.to_string().is_empty());
        }
    }
}
